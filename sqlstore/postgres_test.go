package sqlstore_test

import (
	"fmt"
	"testing"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/sqlstore/pgtest"
	"github.com/andonhq/andon/sqlstore/storetest"
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

func TestPostgresConformance(t *testing.T) {
	t.Parallel()
	storetest.Exercise(t, func(t *testing.T) storetest.Store { return openPG(t) })
}

func TestPostgresRunsConformance(t *testing.T) {
	t.Parallel()
	storetest.ExerciseRuns(t, func(t *testing.T) agent.Store { return openPG(t) })
}

func TestPostgresTokensConformance(t *testing.T) {
	t.Parallel()
	storetest.ExerciseTokens(t, func(t *testing.T) api.TokenStore { return openPG(t) })
}
