package sqlstore_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/sqlstore/pgtest"
)

// onEachCountedBackend runs fn, in parallel, once per backend, on a fresh
// database whose store counts its statements in c.
func onEachCountedBackend(t *testing.T, fn func(t *testing.T, s *sqlstore.Store, c *sqlstore.StatementCounter)) {
	t.Helper()
	open := map[string]func(t *testing.T, c *sqlstore.StatementCounter) *sqlstore.Store{
		"SQLite": func(t *testing.T, c *sqlstore.StatementCounter) *sqlstore.Store {
			s, err := sqlstore.Open(t.Context(), filepath.Join(t.TempDir(), "andon.db"), sqlstore.OpenCounter(c))
			return opened(t, s, err)
		},
		"PostgreSQL": func(t *testing.T, c *sqlstore.StatementCounter) *sqlstore.Store {
			dsn := pgtest.WithParams(pgSchema(t), map[string]string{"pool_max_conns": fmt.Sprint(pgPoolSize)})
			s, err := sqlstore.Open(t.Context(), dsn, sqlstore.OpenCounter(c))
			return opened(t, s, err)
		},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			c := &sqlstore.StatementCounter{}
			fn(t, open[b.name](t, c), c)
		})
	}
}
