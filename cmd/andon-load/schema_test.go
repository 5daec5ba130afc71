package main

import (
	"testing"

	"github.com/andonhq/andon/agent"

	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/sqlstore/pgtest"
)

// A -db URL may carry the store pool's own settings (pool_max_conns):
// the harness's schema is made over a connection that leaves them out,
// and a store opens on the schema's DSN.
func TestSchemaAcceptsPoolSettings(t *testing.T) {
	ctx := t.Context()
	dsn := pgtest.WithParams(pgtest.DSN(t), map[string]string{"pool_max_conns": "3"})
	db, drop, err := schema(ctx, dsn)
	if err != nil {
		t.Fatalf("schema(%q): %v", dsn, err)
	}
	defer func() {
		if err := drop(); err != nil {
			t.Errorf("dropping the schema: %v", err)
		}
	}()
	s, err := sqlstore.OpenPostgres(ctx, db)
	if err != nil {
		t.Fatalf("opening the store on %q: %v", db, err)
	}
	defer s.Close()
	if err := s.RunInsert(ctx, &agent.Run{ID: "r1", Owner: "alice"}); err != nil {
		t.Errorf("inserting a run in the schema: %v", err)
	}
}
