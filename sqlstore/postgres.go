package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/andonhq/andon/agent"
)

// PGStore is andon's store on PostgreSQL: the same interfaces as [Store]
// ([vault.Backend], [audit.Store], [agent.Store]) with the same behaviour,
// for deployments where many worker processes on many machines share one
// database. It is safe for concurrent use by goroutines, processes and
// machines.
//
// Times are stored as Unix nanoseconds (bigint), as on SQLite, so every
// time.Time reads back exactly as it was written and the zero time is 0.
type PGStore struct {
	pool *pgxpool.Pool
	jobs *jobs[pgx.Tx]
}

// OpenPostgres connects to the PostgreSQL database that dsn names (a URL,
// postgres://user:password@host:port/database?sslmode=…, or key=value
// pairs, as [pgxpool.ParseConfig] reads them) and applies the embedded
// migrations (migrations/postgres/*.sql) that have not run yet. Processes
// opening one database at once migrate it once: the migration holds an
// advisory lock.
//
// The tables are created in the first schema of the connection's
// search_path, so a DSN with search_path=NAME (NAME must exist) keeps
// andon's tables in a schema of their own. The DSN may also set the pool's
// size (pool_max_conns=N); see [pgxpool.ParseConfig]. Close the PGStore
// when done.
func OpenPostgres(ctx context.Context, dsn string) (*PGStore, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors redact the password.
		return nil, fmt.Errorf("sqlstore: parsing the PostgreSQL DSN: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: connecting to PostgreSQL %s: %w", where(cfg), err)
	}
	j, err := newJobs(riverpgxv5.New(pool))
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("sqlstore: PostgreSQL %s: %w", where(cfg), err)
	}
	s := &PGStore{pool: pool, jobs: j}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("sqlstore: migrating PostgreSQL %s: %w", where(cfg), err)
	}
	return s, nil
}

// Queue returns River workers on the store's database, for
// agent.Config.Queue.
func (s *PGStore) Queue(opts QueueOptions) agent.Queue {
	return &queue[pgx.Tx]{jobs: s.jobs, opts: opts, adopt: s.adoptQueued}
}

// adoptQueued is [Store.adoptQueued] on PostgreSQL.
func (s *PGStore) adoptQueued(ctx context.Context) error {
	rows, err := s.pool.Query(ctx, `SELECT id FROM runs WHERE status = 'queued' AND job_id IS NULL ORDER BY created_at, id`)
	if err != nil {
		return err
	}
	ids, err := collect(rows, "listing queued runs without a job", scanID)
	rows.Close()
	if err != nil {
		return err
	}
	return s.jobs.adopt(ctx, ids, s.inTx, func(tx pgx.Tx, id string, jobID int64) (bool, error) {
		tag, err := tx.Exec(ctx, `UPDATE runs SET job_id = $1 WHERE id = $2 AND status = 'queued' AND job_id IS NULL`, jobID, id)
		return err == nil && tag.RowsAffected() == 1, err
	})
}

// Close closes every connection of the pool, waiting for those in use to
// be returned.
func (s *PGStore) Close() error {
	s.pool.Close()
	return nil
}

// where names a database for error messages, without credentials.
func where(cfg *pgxpool.Config) string {
	return fmt.Sprintf("%s:%d/%s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
}

// inTx runs fn in a transaction, committing if it returns nil and rolling
// back otherwise.
func (s *PGStore) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, ignoreClosed(tx.Rollback(ctx)))
	}
	return tx.Commit(ctx)
}

func ignoreClosed(err error) error {
	if errors.Is(err, pgx.ErrTxClosed) {
		return nil
	}
	return err
}
