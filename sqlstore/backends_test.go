package sqlstore_test

import (
	"path/filepath"
	"testing"

	"github.com/andonhq/andon/sqlstore"
)

// A backend makes fresh databases. Tests that stand for several processes
// open several stores (each with its own connections) on one database.
type backend struct {
	name string
	// database makes a fresh, empty database for t and returns how to
	// open a store on it; each store opened is closed at cleanup.
	database func(t *testing.T) (open func(t *testing.T) *sqlstore.Store)
}

var backends = []backend{
	{"SQLite", func(t *testing.T) func(t *testing.T) *sqlstore.Store {
		path := filepath.Join(t.TempDir(), "andon.db")
		return func(t *testing.T) *sqlstore.Store { return openSQLiteAt(t, path) }
	}},
	{"PostgreSQL", func(t *testing.T) func(t *testing.T) *sqlstore.Store {
		dsn := pgSchema(t)
		return func(t *testing.T) *sqlstore.Store { return openPGAt(t, dsn) }
	}},
}

// onEachBackend runs fn, in parallel, once per backend, on a fresh database.
func onEachBackend(t *testing.T, fn func(t *testing.T, open func(t *testing.T) *sqlstore.Store)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			fn(t, b.database(t))
		})
	}
}

// openSQLiteAt opens a SQLite store on the file at path, closed at cleanup.
func openSQLiteAt(t *testing.T, path string) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.Open(t.Context(), path)
	return opened(t, s, err)
}

// opened returns the store just opened, closed at cleanup, or fails t with
// the error that opening it returned.
func opened(t *testing.T, s *sqlstore.Store, err error) *sqlstore.Store {
	t.Helper()
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
