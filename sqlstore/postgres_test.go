package sqlstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/sqlstore/storetest"
	"github.com/jackc/pgx/v5"
)

// The PostgreSQL tests need a server. ANDON_TEST_POSTGRES names it (a DSN
// whose user may create schemas in its database); without it, the tests try
// the users postgres and root on 127.0.0.1:5432, database test, without a
// password. Each test works in a schema of its own, dropped at cleanup, so
// the tests run in parallel on one database.
const pgEnv = "ANDON_TEST_POSTGRES"

var pgDefaultDSNs = []string{
	"postgres://postgres@127.0.0.1:5432/test?sslmode=disable",
	"postgres://root@127.0.0.1:5432/test?sslmode=disable",
}

// pgSlots bounds the schemas (and so the connection pools) alive at once,
// whatever -parallel is, to stay well below the server's max_connections.
var pgSlots = make(chan struct{}, 8)

// pgPoolSize is each test store's pool size.
const pgPoolSize = 4

// pgServer finds, once, a DSN that connects.
var pgServer = sync.OnceValues(func() (string, error) {
	dsns := pgDefaultDSNs
	if dsn := os.Getenv(pgEnv); dsn != "" {
		dsns = []string{dsn}
	}
	var errs []error
	for _, dsn := range dsns {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := pgExec(ctx, dsn, `SELECT 1`)
		cancel()
		if err == nil {
			return dsn, nil
		}
		errs = append(errs, err)
	}
	return "", errors.Join(errs...)
})

// pgDSN returns the test server's DSN. If there is no server, it fails the
// test when the environment variable CI is set (CI must not pass by
// skipping) and skips it otherwise.
func pgDSN(t *testing.T) string {
	t.Helper()
	dsn, err := pgServer()
	if err == nil {
		return dsn
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("PostgreSQL is unreachable and CI is set, so its tests may not be skipped "+
			"(set %s to a DSN, or start the server; .ci/run does): %v", pgEnv, err)
	}
	t.Skipf("PostgreSQL is unreachable, skipping (start it with "+
		"`pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`, "+
		"or set %s to a DSN): %v", pgEnv, err)
	return ""
}

// pgSchema creates a fresh schema for t, dropped at cleanup, and returns a
// DSN whose connections use it (search_path).
func pgSchema(t *testing.T) string {
	t.Helper()
	dsn := pgDSN(t)
	select {
	case pgSlots <- struct{}{}:
	case <-t.Context().Done():
		t.Fatal(t.Context().Err())
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	schema := "test_" + hex.EncodeToString(b[:])
	if err := pgExec(t.Context(), dsn, `CREATE SCHEMA `+schema); err != nil {
		<-pgSlots
		t.Fatalf("creating schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		defer func() { <-pgSlots }()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := pgExec(ctx, dsn, `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	return withParams(dsn, map[string]string{"search_path": schema})
}

// openPG opens a store in a fresh schema, closed at cleanup.
func openPG(t *testing.T) *sqlstore.PGStore {
	t.Helper()
	return openPGAt(t, pgSchema(t))
}

// openPGAt opens a store on dsn, with a small pool, closed at cleanup.
func openPGAt(t *testing.T, dsn string) *sqlstore.PGStore {
	t.Helper()
	s, err := sqlstore.OpenPostgres(t.Context(), withParams(dsn, map[string]string{"pool_max_conns": fmt.Sprint(pgPoolSize)}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// pgExec runs one statement on a connection of its own.
func pgExec(ctx context.Context, dsn, stmt string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, stmt)
	return errors.Join(err, conn.Close(context.WithoutCancel(ctx)))
}

// withParams adds runtime or pool parameters to a DSN of either form.
func withParams(dsn string, params map[string]string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err == nil {
			q := u.Query()
			for k, v := range params {
				q.Set(k, v)
			}
			u.RawQuery = q.Encode()
			return u.String()
		}
	}
	for k, v := range params {
		dsn += " " + k + "=" + v
	}
	return dsn
}

func TestPostgresConformance(t *testing.T) {
	t.Parallel()
	storetest.Exercise(t, func(t *testing.T) storetest.Store { return openPG(t) })
}

func TestPostgresRunsConformance(t *testing.T) {
	t.Parallel()
	storetest.ExerciseRuns(t, func(t *testing.T) agent.Store { return openPG(t) })
}
