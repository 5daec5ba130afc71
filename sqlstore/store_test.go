package sqlstore_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/andonhq/andon/sqlstore"
)

func TestOpenTwiceMigratesOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "andon.db")
	for range 2 {
		s, err := sqlstore.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenTurnsOnWAL(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "andon.db")
	s, err := sqlstore.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var mode string
	if err := raw.QueryRowContext(t.Context(), `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v; want wal", mode, err)
	}
	var migrations int
	files, _ := filepath.Glob("migrations/*.sql")
	if err := raw.QueryRowContext(t.Context(), `SELECT count(*) FROM schema_migrations`).Scan(&migrations); err != nil || migrations != len(files) {
		t.Fatalf("schema_migrations has %d rows, %v; want one per migration file, %d", migrations, err, len(files))
	}
}
