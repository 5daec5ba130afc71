package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/andonhq/andon/agent"
)

// Store is andon's database, on SQLite or on PostgreSQL, with the same
// behaviour on both. It is safe for concurrent use by goroutines, and by
// several processes on one database (on PostgreSQL, on many machines).
type Store struct {
	d        dialect
	finishes *finishBatcher
	steps    *groupCommit[oneGroup, *stepReq] // SQLite only: nil on PostgreSQL
	inserts  *groupCommit[oneGroup, *insertReq]
}

func newStore(d dialect) *Store {
	s := &Store{d: d}
	s.finishes = newFinishBatcher(s.writeFinishes)
	s.inserts = newGroupCommit(maxInsertBatch, insertWriteTimeout, unkeyed(s.writeRunInserts))
	return s
}

// Open opens the database that dsn names and migrates it: a PostgreSQL
// URL (postgres://… or postgresql://…, as [OpenPostgres] takes it), or else
// the path of a SQLite file, created if needed with mode 0600. Close the
// Store when done.
func Open(ctx context.Context, dsn string, opts ...OpenOption) (*Store, error) {
	if IsPostgres(dsn) {
		return OpenPostgres(ctx, dsn, opts...)
	}
	cfg := openConfig{logger: slog.Default()}
	for _, o := range opts {
		o(&cfg)
	}
	d, err := openSQLite(dsn, cfg)
	if err != nil {
		return nil, err
	}
	if err := d.migrate(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("sqlstore: migrating %s: %w", dsn, err), d.close())
	}
	s := newStore(d)
	s.steps = newGroupCommit(maxStepBatch, stepWriteTimeout, unkeyed(s.writeStepBatch)) // one writer: appends group-commit
	return s, nil
}

// IsPostgres reports whether dsn names a PostgreSQL database (a
// postgres:// or postgresql:// URL) rather than a SQLite file.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// Close closes the database: on PostgreSQL, every connection of the pool,
// waiting for those in use to be returned.
func (s *Store) Close() error { return s.d.close() }

// SchemaVersion returns the number of the newest migration applied to the
// database (opening a store applies every one it has).
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	if err := s.d.queryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("sqlstore: reading the schema version: %w", err)
	}
	return v, nil
}

// Queue returns River workers on the store's database, for
// agent.Config.Queue.
func (s *Store) Queue(opts QueueOptions) agent.Queue {
	return s.d.queue(opts, s.adoptQueued)
}

// adoptQueued gives a River job to every queued run without one: runs
// queued before River carried them (schema version 4 and older), each in
// its own transaction. Two processes adopting at once give each run one
// job: the job id is recorded only on a run that has none, else the insert
// rolls back.
func (s *Store) adoptQueued(ctx context.Context) error {
	rs, err := s.d.query(ctx, `SELECT runs.id FROM active_runs JOIN runs ON runs.id = active_runs.id
		WHERE active_runs.status = 'queued' AND runs.status = 'queued' AND runs.job_id IS NULL
		ORDER BY runs.created_at, runs.id`)
	if err != nil {
		return err
	}
	ids, err := collect(rs, "listing queued runs without a job", scanID)
	if cerr := rs.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	for _, id := range ids {
		err := s.d.inTx(ctx, func(tx tx) error {
			jobIDs, err := tx.enqueue(ctx, id)
			if err != nil {
				return err
			}
			won, err := changedOne(tx.exec(ctx, `UPDATE runs SET job_id = ? WHERE id = ? AND status = 'queued' AND job_id IS NULL`, jobIDs[0], id))
			if err == nil && !won {
				err = errAdopted
			}
			return err
		})
		if err != nil && !errors.Is(err, errAdopted) {
			return err
		}
	}
	return nil
}

// errAdopted reports, inside an adoption's transaction, that another
// process gave the run its job first: the transaction rolls back.
var errAdopted = errors.New("the run has a job already")

// changedOne reports whether a statement changed one row.
func changedOne(n int64, err error) (bool, error) {
	return err == nil && n == 1, err
}
