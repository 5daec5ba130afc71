package node

import (
	"context"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/token"
	"github.com/andonhq/andon/vault"
)

// Store is the database a node runs on: a [sqlstore.Store], on a SQLite file
// or PostgreSQL. It holds the runs, the queue of their
// River jobs, the sealed secrets, the audit rows, the operators' tool
// settings and the API tokens.
type Store interface {
	vault.Backend
	audit.Store
	agent.Store
	agent.InputStore // servers' questions to operators
	catalogue.SettingsStore
	token.Store
	// Queue returns the River queue of the runs' jobs.
	Queue(sqlstore.QueueOptions) agent.Queue
	// CancelRunJobs cancels the River jobs of cancelled runs, in one
	// transaction, which reaches the workers holding them, in whichever
	// process.
	CancelRunJobs(ctx context.Context, ids []string) error
	// Notifier returns the store's cancel bus, if it has one: PostgreSQL's
	// LISTEN/NOTIFY.
	Notifier() (sqlstore.Notifier, bool)
	// TokenCanceller returns what checks an API token and cancels in one
	// statement, if the database can: PostgreSQL.
	TokenCanceller() (sqlstore.TokenCanceller, bool)
}

var _ Store = (*sqlstore.Store)(nil)

// store is what openStore opens: a Store that the node closes.
type store interface {
	Store
	Close() error
}

// openStore opens (and migrates) the database at dsn: PostgreSQL for a
// postgres:// or postgresql:// URL, else the SQLite file at that path.
func openStore(ctx context.Context, dsn string, opts ...sqlstore.OpenOption) (store, error) {
	return sqlstore.Open(ctx, dsn, opts...)
}
