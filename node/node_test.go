package node_test

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/node"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/sqlstore/pgtest"
	"github.com/andonhq/andon/vault"
	"go.uber.org/goleak"
)

func newKey(t *testing.T) vault.Key {
	t.Helper()
	k, err := vault.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A config New refuses is refused before anything is opened: no database
// file appears.
func TestNewRefusesABadConfig(t *testing.T) {
	key := newKey(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "andon.db")
	other, err := sqlstore.Open(context.Background(), filepath.Join(t.TempDir(), "other.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, tc := range []struct {
		name string
		cfg  *node.Config
	}{
		{"nil", nil},
		{"no database", &node.Config{Key: key}},
		{"two databases", &node.Config{DB: db, Store: other, Key: key}},
		{"no key", &node.Config{DB: db}},
		{"negative workers", &node.Config{DB: db, Key: key, Workers: -1}},
		{"openai without a URL", &node.Config{DB: db, Key: key, OpenAI: &node.OpenAI{Model: "gpt"}}},
		{"openai with a URL holding a query", &node.Config{DB: db, Key: key, OpenAI: &node.OpenAI{BaseURL: "https://api.example/v1?key=k"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := node.New(context.Background(), tc.cfg)
			if !errors.Is(err, node.ErrInvalidConfig) || n != nil {
				t.Fatalf("New = %v, %v; want ErrInvalidConfig", n, err)
			}
			if _, err := os.Stat(db); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("New refused the config but created the database (stat: %v)", err)
			}
		})
	}
}

// A database that cannot be opened fails New with the store's error —
// which never quotes the password of a PostgreSQL URL.
func TestNewFailsWhenTheStoreCannotOpen(t *testing.T) {
	key := newKey(t)
	t.Run("sqlite in a missing directory", func(t *testing.T) {
		n, err := node.New(context.Background(), &node.Config{DB: filepath.Join(t.TempDir(), "missing", "andon.db"), Key: key})
		if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, node.ErrInvalidConfig) || n != nil {
			t.Fatalf("New = %v, %v; want the store's fs.ErrNotExist", n, err)
		}
	})
	t.Run("postgres nobody listens for", func(t *testing.T) {
		const password = "pw-never-in-errors"
		n, err := node.New(context.Background(), &node.Config{DB: "postgres://andon:" + password + "@127.0.0.1:1/andon?sslmode=disable", Key: key})
		if err == nil || errors.Is(err, node.ErrInvalidConfig) || n != nil {
			t.Fatalf("New = %v, %v; want the store's error", n, err)
		}
		if strings.Contains(err.Error(), password) {
			t.Fatalf("the error quotes the password: %v", err)
		}
	})
}

// A node on a database sealed under another master key refuses to start:
// its audit log could not be chained (nor its secrets read).
func TestNewRefusesTheWrongKey(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "andon.db")
	n, err := node.New(ctx, &node.Config{DB: db, Key: newKey(t)})
	if err != nil {
		t.Fatal(err)
	}
	n.Close()
	n, err = node.New(ctx, &node.Config{DB: db, Key: newKey(t)})
	if !errors.Is(err, vault.ErrWrongKey) || n != nil {
		t.Fatalf("New with another key = %v, %v; want vault.ErrWrongKey", n, err)
	}
}

// Run works until its ctx ends, returns its cause, and leaves nothing
// running once the node is closed: on each backend, executing runs or
// serving only (the PostgreSQL node has its LISTEN connection too).
func TestRunStopsCleanly(t *testing.T) {
	for _, tc := range []struct {
		name     string
		postgres bool
		apiOnly  bool
	}{
		{"sqlite", false, false},
		{"sqlite api only", false, true},
		{"postgres", true, false},
		{"postgres api only", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t)
			ctx := context.Background()
			db := filepath.Join(t.TempDir(), "andon.db")
			if tc.postgres {
				db = pgtest.Schema(t)
			}
			n, err := node.New(ctx, &node.Config{DB: db, Key: newKey(t), APIOnly: tc.apiOnly})
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close()
			// A run it may execute, so that the queue has a job to work.
			run, err := n.Runtime().Submit(ctx, "o", &agent.Request{Prompt: "p", Script: []byte(`{"steps": [{"text": "done"}]}`)})
			if err != nil {
				t.Fatal(err)
			}
			why := errors.New("the embedder stops the node")
			runCtx, stop := context.WithCancelCause(ctx)
			stopped := make(chan error, 1)
			go func() { stopped <- n.Run(runCtx) }()
			if !tc.apiOnly {
				waitFor(t, n, run.ID, agent.StatusCompleted)
			}
			stop(why)
			if err := <-stopped; !errors.Is(err, why) {
				t.Fatalf("Run = %v, want its ctx's cause", err)
			}
			n.Close()
		})
	}
}

// A queue that cannot work stops Run on its own, with why — on PostgreSQL
// too, where the LISTEN connection must not keep Run waiting for a ctx
// that nobody will cancel.
func TestRunReturnsWhyTheQueueStopped(t *testing.T) {
	for _, postgres := range []bool{false, true} {
		name := map[bool]string{false: "sqlite", true: "postgres"}[postgres]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			db := filepath.Join(t.TempDir(), "andon.db")
			if postgres {
				db = pgtest.Schema(t)
			}
			n, err := node.New(ctx, &node.Config{DB: db, Key: newKey(t)})
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close()
			breakQueue(t, db, postgres)
			stopped := make(chan error, 1)
			go func() { stopped <- n.Run(ctx) }()
			select {
			case err := <-stopped:
				if err == nil || !strings.Contains(err.Error(), "executing runs") || !strings.Contains(err.Error(), "job_id") {
					t.Fatalf("Run = %v, want why the queue stopped", err)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("Run did not return when its queue stopped")
			}
		})
	}
}

// breakQueue takes away the column the runs' jobs are found by.
func breakQueue(t *testing.T, db string, postgres bool) {
	t.Helper()
	const stmt = `ALTER TABLE runs RENAME COLUMN job_id TO job_id_gone`
	if postgres {
		if err := pgtest.Exec(t.Context(), db, stmt); err != nil {
			t.Fatal(err)
		}
		return
	}
	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(stmt); err != nil {
		t.Fatal(err)
	}
}
