package sqlstore_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/sqlstore"
)

// Open takes a PostgreSQL URL (either scheme) to PostgreSQL, and anything
// else to a SQLite file at that path; only the PostgreSQL store has a
// Notifier. Where the data went is read with each database's own driver.
func TestOpenPicksTheBackendFromTheDSN(t *testing.T) {
	t.Parallel()
	ctx := t.Context()

	path := filepath.Join(t.TempDir(), "andon.db")
	lite, err := sqlstore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	if _, ok := lite.Notifier(); ok {
		t.Error("a SQLite store has a Notifier")
	}
	if err := lite.RunInsert(ctx, &agent.Run{ID: "in-sqlite", Owner: "o"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no SQLite file at %s: %v", path, err)
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var n int
	if err := raw.QueryRowContext(ctx, `SELECT count(*) FROM runs WHERE id = 'in-sqlite'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the SQLite file holds %d runs in-sqlite, %v; want 1", n, err)
	}

	dsn := pgSchema(t)
	if !sqlstore.IsPostgres(dsn) {
		t.Skip("the test server's DSN is key=value pairs; Open takes PostgreSQL by URL")
	}
	for i, url := range []string{dsn, "postgresql://" + strings.TrimPrefix(dsn, "postgres://")} {
		pg, err := sqlstore.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer pg.Close()
		if _, ok := pg.Notifier(); !ok {
			t.Errorf("Open(%s…) has no Notifier; want a PostgreSQL store", url[:13])
		}
		if i == 0 {
			if err := pg.RunInsert(ctx, &agent.Run{ID: "in-postgres", Owner: "o"}); err != nil {
				t.Fatal(err)
			}
		}
		if r, err := pg.RunGet(ctx, "in-postgres"); err != nil || r.Owner != "o" {
			t.Fatalf("Open(%s…): RunGet = %+v, %v; want the run", url[:13], r, err)
		}
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM runs WHERE id = 'in-postgres'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("PostgreSQL holds %d runs in-postgres, %v; want 1", n, err)
	}
}
