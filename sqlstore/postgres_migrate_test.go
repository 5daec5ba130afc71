package sqlstore_test

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/andonhq/andon/sqlstore"
	"github.com/jackc/pgx/v5"
)

// Workers started at once migrate a new database once: the others wait for
// the advisory lock, then find every migration applied.
func TestPostgresWorkersOpeningAtOnceMigrateOnce(t *testing.T) {
	t.Parallel()
	dsn := pgSchema(t)
	const workers = 4
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			s, err := sqlstore.OpenPostgres(t.Context(), dsn)
			if err != nil {
				t.Error(err)
				return
			}
			if err := s.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	s := openPGAt(t, dsn) // and once more, later
	if _, err := s.AuditHeads(t.Context()); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("migrations/postgres/*.sql")
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var applied int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM schema_migrations`).Scan(&applied); err != nil || applied != len(files) {
		t.Fatalf("schema_migrations has %d rows, %v; want one per migration file, %d", applied, err, len(files))
	}
}

func TestPostgresOpenFailsWithoutLeakingThePassword(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1.
	_, err := sqlstore.OpenPostgres(t.Context(), "postgres://andon:hunter2@127.0.0.1:1/test?sslmode=disable&connect_timeout=5")
	if err == nil {
		t.Fatal("OpenPostgres of a closed port succeeded")
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("the error shows the password: %v", err)
	}
	_, err = sqlstore.OpenPostgres(t.Context(), "postgres://andon:hunter2@127.0.0.1:notaport/test")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("OpenPostgres(bad DSN) = %v; want an error without the password", err)
	}
}
