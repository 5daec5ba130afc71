package sqlstore_test

import (
	"fmt"
	"testing"

	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/sqlstore/pgtest"
)

// The PostgreSQL tests get their server and a schema each from package
// pgtest; pgPoolSize is each test store's pool size.
const pgPoolSize = 4

// pgSchema creates a fresh schema for t (see pgtest.Schema).
func pgSchema(t *testing.T) string { return pgtest.Schema(t) }

// openPG opens a store in a fresh schema, closed at cleanup.
func openPG(t *testing.T) *sqlstore.Store {
	t.Helper()
	return openPGAt(t, pgSchema(t))
}

// openPGAt opens a store on dsn, with a small pool, closed at cleanup.
func openPGAt(t *testing.T, dsn string) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.OpenPostgres(t.Context(), pgtest.WithParams(dsn, map[string]string{"pool_max_conns": fmt.Sprint(pgPoolSize)}))
	return opened(t, s, err)
}
