package node

import (
	"context"
	"strings"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/vault"
)

// Store is the database a node runs on: a SQLite file ([sqlstore.Store]) or
// PostgreSQL ([sqlstore.PGStore]). It holds the runs, the queue of their
// River jobs, the sealed secrets, the audit rows, the operators' tool
// settings and the API tokens.
type Store interface {
	vault.Backend
	audit.Store
	agent.Store
	catalogue.SettingsStore
	api.TokenStore
	// Queue returns the River queue of the runs' jobs.
	Queue(sqlstore.QueueOptions) agent.Queue
	// CancelRunJob cancels the River job of a run, which reaches the
	// worker holding it, in whichever process.
	CancelRunJob(ctx context.Context, id string) error
}

var (
	_ Store = (*sqlstore.Store)(nil)
	_ Store = (*sqlstore.PGStore)(nil)
)

// store is what openStore opens: a Store that the node closes.
type store interface {
	Store
	Close() error
}

// openStore opens (and migrates) the database at dsn: PostgreSQL for a
// postgres:// or postgresql:// URL, else the SQLite file at that path.
func openStore(ctx context.Context, dsn string, opts ...sqlstore.OpenOption) (store, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return sqlstore.OpenPostgres(ctx, dsn)
	}
	return sqlstore.Open(ctx, dsn, opts...)
}
