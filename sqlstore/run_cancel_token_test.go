package sqlstore_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/sqlstore/pgtest"
	"github.com/andonhq/andon/token"
)

// Only PostgreSQL offers the cancel by token: SQLite keeps its two
// in-process statements.
func TestTokenCancellerOnlyOnPostgres(t *testing.T) {
	t.Parallel()
	lite, err := sqlstore.Open(t.Context(), filepath.Join(t.TempDir(), "andon.db"))
	lite = opened(t, lite, err)
	if tc, ok := lite.TokenCanceller(); ok || tc != nil {
		t.Errorf("SQLite offers a TokenCanceller")
	}
	if tc, ok := openPG(t).TokenCanceller(); !ok || tc == nil {
		t.Errorf("PostgreSQL offers no TokenCanceller")
	}
}

// storeToken makes and stores a token for name with role, revoked if asked,
// and returns its hash.
func storeToken(t *testing.T, s *sqlstore.Store, name string, role token.Role, revoked bool) []byte {
	t.Helper()
	_, tok, err := token.New(name, role, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.TokenCreate(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	if revoked {
		if err := s.TokenRevoke(t.Context(), tok.ID, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	return tok.Hash
}

// A cancel by token is one statement that cancels only what the token may
// cancel — a valid token of a role at least the one asked for, on its own
// run or as an admin — and announces only that; an unknown, revoked or
// viewer's token, or another operator's, cancels nothing and announces
// nothing. The token row comes back whatever the verdict, for the API to
// decide from.
func TestRunCancelByToken(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := &sqlstore.StatementCounter{}
	s, err := sqlstore.OpenPostgres(ctx, pgtest.WithParams(pgSchema(t), map[string]string{"pool_max_conns": "4"}), sqlstore.OpenCounter(c))
	s = opened(t, s, err)
	tc, ok := s.TokenCanceller()
	if !ok {
		t.Fatal("no TokenCanceller on PostgreSQL")
	}
	l := listen(t, s)
	alice := storeToken(t, s, "alice", token.RoleOperator, false)
	bob := storeToken(t, s, "bob", token.RoleOperator, false)
	root := storeToken(t, s, "root", token.RoleAdmin, false)
	vic := storeToken(t, s, "vic", token.RoleViewer, false)
	carol := storeToken(t, s, "carol", token.RoleAdmin, true) // revoked
	_, never, err := token.New("dave", token.RoleAdmin, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	owners := map[string]string{"a1": "alice", "a2": "alice", "a3": "alice", "c1": "carol", "v1": "vic", "tasked": "alice"}
	for id, owner := range owners {
		if err := s.RunInsert(ctx, &agent.Run{ID: id, Owner: owner, Status: agent.StatusRunning, LeaseOwner: "w1",
			LeaseExpires: time.Now().Add(time.Hour), Request: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := s.TaskRecord(ctx, "w1", &agent.Task{CallRef: agent.CallRef{RunID: "tasked", Step: 1, Tool: "t"}, Server: "s", ID: "t1"}); err != nil || !ok {
		t.Fatalf("TaskRecord = %v, %v", ok, err)
	}
	for _, tc2 := range []struct {
		what     string
		id       string
		hash     []byte
		announce bool
		name     string // the token read; empty: none
		win      bool
	}{
		{"an unknown token", "a1", never.Hash, true, "", false},
		{"a revoked admin's token on its own run", "c1", carol, true, "carol", false},
		{"a revoked admin's token on another's", "a1", carol, true, "carol", false},
		{"a viewer's token on its own run", "v1", vic, true, "vic", false},
		{"another operator's token", "a1", bob, true, "bob", false},
		{"an admin's token on a run with a task", "tasked", root, true, "root", false},
		{"the owner's token", "a1", alice, true, "alice", true},
		{"an admin's token on a finished run", "a1", root, true, "root", false},
		{"an admin's token, not announced", "a2", root, false, "root", true},
		{"an admin's token on another's run", "a3", root, true, "root", true},
	} {
		before := c.Read()
		tok, won, announced, err := tc.RunCancelByToken(ctx, tc2.hash, tc2.id, token.RoleOperator, tc2.announce)
		if d := c.Read().Sub(before); d.Statements != 1 || d.Transactions != 0 {
			t.Errorf("%s: %d statements in %d transactions; want 1 statement, no transaction", tc2.what, d.Statements, d.Transactions)
		}
		switch {
		case tc2.name == "":
			if !errors.Is(err, token.ErrNotFound) || tok != nil || won {
				t.Fatalf("%s: = %v, %v, %v; want token.ErrNotFound", tc2.what, tok, won, err)
			}
		case err != nil || tok == nil || tok.Name != tc2.name || won != tc2.win || announced != (tc2.win && tc2.announce):
			t.Fatalf("%s: = %+v, won %v, announced %v, %v; want token %s, won %v", tc2.what, tok, won, announced, err, tc2.name, tc2.win)
		}
		run, err := s.RunGet(ctx, tc2.id)
		if err != nil {
			t.Fatal(err)
		}
		if tc2.win != (run.Status == agent.StatusCancelled) && tc2.what != "an admin's token on a finished run" {
			t.Fatalf("%s: run %s is %s after the cancel (won %v)", tc2.what, tc2.id, run.Status, tc2.win)
		}
		if tc2.win && tc2.announce {
			if got := l.next(); got != tc2.id {
				t.Fatalf("%s: heard %q, want %s (and nothing of the cancels that lost)", tc2.what, got, tc2.id)
			}
		}
	}
	// The revoked token's run, the viewer's and the one with a task still
	// run; carol's revoked token came back revoked.
	for _, id := range []string{"c1", "v1", "tasked"} {
		if run, err := s.RunGet(ctx, id); err != nil || run.Status != agent.StatusRunning {
			t.Errorf("run %s: %v, %v; want still running", id, run.Status, err)
		}
	}
	tok, _, _, err := tc.RunCancelByToken(ctx, carol, "c1", token.RoleOperator, true)
	if err != nil || tok.RevokedAt.IsZero() || tok.Role != token.RoleAdmin {
		t.Errorf("the revoked token read as %+v, %v", tok, err)
	}
}

// Concurrent cancels by token share statements, and each run is cancelled
// exactly once, by the token that may: of alice's, bob's and a viewer's
// cancels of alice's runs, alice's win, and nothing else does.
func TestRunCancelByTokenConcurrent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openPG(t)
	tc, _ := s.TokenCanceller()
	hashes := map[string][]byte{
		"alice": storeToken(t, s, "alice", token.RoleOperator, false),
		"bob":   storeToken(t, s, "bob", token.RoleOperator, false),
		"vic":   storeToken(t, s, "vic", token.RoleViewer, false),
	}
	const runs = 40
	for i := range runs {
		if err := s.RunInsert(ctx, &agent.Run{ID: fmt.Sprint("r", i), Owner: "alice", Status: agent.StatusRunning, Request: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu   sync.Mutex
		wins = map[string][]string{}
		wg   sync.WaitGroup
	)
	for i := range runs {
		for name, hash := range hashes {
			wg.Go(func() {
				tok, won, _, err := tc.RunCancelByToken(ctx, hash, fmt.Sprint("r", i), token.RoleOperator, true)
				if err != nil || tok == nil || tok.Name != name {
					t.Errorf("%s cancelling r%d: %+v, %v", name, i, tok, err)
					return
				}
				if won {
					mu.Lock()
					wins[fmt.Sprint("r", i)] = append(wins[fmt.Sprint("r", i)], name)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	for i := range runs {
		id := fmt.Sprint("r", i)
		if w := wins[id]; len(w) != 1 || w[0] != "alice" {
			t.Errorf("run %s was cancelled by %v, want alice only", id, w)
		}
		if run, err := s.RunGet(ctx, id); err != nil || run.Status != agent.StatusCancelled {
			t.Errorf("run %s: %v, %v; want cancelled", id, run.Status, err)
		}
	}
}
