package sqlstore_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/sqlstore/pgtest"
)

// The pool sends no ping before a statement: a statement on a connection
// whose backend died meanwhile fails (the error reaches the caller, who
// handles it) instead of being preceded by a ping that would have found
// the connection dead and taken another; and the pool replaces the dead
// connection, so the next statement works.
func TestPostgresNoPingBeforeAStatement(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgSchema(t)
	s, err := sqlstore.OpenPostgres(ctx, pgtest.WithParams(dsn, map[string]string{"pool_max_conns": "2", "application_name": "andon_noping"}))
	s = opened(t, s, err)
	if _, err := s.RunStatuses(ctx, []string{"warm"}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var killed int
	if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = 'andon_noping' AND pid <> pg_backend_pid()`).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed == 0 {
		t.Fatal("the store has no connection to terminate")
	}
	// Every idle connection of the pool is dead now: each fails the one
	// statement it is handed, once, and is replaced.
	for i := range killed {
		if _, err := s.RunStatuses(ctx, []string{"r"}); err == nil {
			t.Fatalf("statement %d of %d on a connection whose backend was terminated succeeded: the pool pinged it first and dialled anew", i+1, killed)
		}
	}
	if _, err := s.RunStatuses(ctx, []string{"r"}); err != nil {
		t.Fatalf("after the dead connections failed a statement each, the next one: %v (the pool did not replace them)", err)
	}
}
