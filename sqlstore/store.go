package sqlstore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/riverqueue/river/riverdriver/riversqlite"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/andonhq/andon/agent"
)

// BusyTimeout is how long a statement waits for another connection's or
// process's write lock before failing.
const BusyTimeout = 10 * time.Second

// Store is a SQLite database holding andon's secrets and audit log. It is safe
// for concurrent use by goroutines and by several processes on one file.
type Store struct {
	db   *sql.DB
	jobs *jobs[*sql.Tx]
}

//go:embed migrations/*.sql
var migrations embed.FS

// Open opens (creating if needed, with mode 0600) the SQLite database at
// path and migrates it. Close the Store when done.
func Open(ctx context.Context, path string, opts ...OpenOption) (*Store, error) {
	cfg := openConfig{logger: slog.Default()}
	for _, o := range opts {
		o(&cfg)
	}
	if err := prepareFile(path, cfg.logger); err != nil {
		return nil, fmt.Errorf("sqlstore: creating %s: %w", path, err)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(BusyTimeout.Milliseconds(), 10)+")")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Set("_txlock", "immediate") // take the write lock at BEGIN: no upgrade deadlocks
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlstore: opening %s: %w", path, err)
	}
	j, err := newJobs(riversqlite.New(db))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("sqlstore: %s: %w", path, err), db.Close())
	}
	s := &Store{db: db, jobs: j}
	if err := s.migrate(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("sqlstore: migrating %s: %w", path, err), db.Close())
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// migrate applies, in one transaction, every embedded migration not yet
// recorded in schema_migrations.
func (s *Store) migrate(ctx context.Context) error {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	slices.Sort(names)
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			name       TEXT    NOT NULL,
			applied_at INTEGER NOT NULL
		) STRICT`); err != nil {
			return err
		}
		for _, name := range names {
			base := strings.TrimPrefix(name, "migrations/")
			num, _, _ := strings.Cut(base, "_")
			version, err := strconv.Atoi(num)
			if err != nil {
				return fmt.Errorf("migration %s: name must start with a number", base)
			}
			var done int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, version).Scan(&done); err != nil {
				return err
			}
			if done > 0 {
				continue
			}
			body, err := migrations.ReadFile(name)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, string(body)); err != nil {
				return fmt.Errorf("migration %s: %w", base, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				version, base, time.Now().UnixNano()); err != nil {
				return err
			}
		}
		return s.jobs.migrateTx(ctx, tx)
	})
}

// Queue returns River workers on the store's database, for
// agent.Config.Queue.
func (s *Store) Queue(opts QueueOptions) agent.Queue {
	return &queue[*sql.Tx]{jobs: s.jobs, opts: opts, adopt: s.adoptQueued}
}

// adoptQueued gives a River job to every queued run without one: runs
// queued before River carried them (schema version 4 and older). Two
// processes adopting at once give each run one job: the job id is recorded
// only on a run that has none, else the insert rolls back.
func (s *Store) adoptQueued(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM runs WHERE status = 'queued' AND job_id IS NULL ORDER BY created_at, id`)
	if err != nil {
		return err
	}
	defer rows.Close()
	ids, err := collect(rows, "listing queued runs without a job", scanID)
	if err != nil {
		return err
	}
	rows.Close()
	return s.jobs.adopt(ctx, ids, s.inTx, func(tx *sql.Tx, id string, jobID int64) (bool, error) {
		return changedOne(tx.ExecContext(ctx, `UPDATE runs SET job_id = ? WHERE id = ? AND status = 'queued' AND job_id IS NULL`, jobID, id))
	})
}

// inTx runs fn in a transaction, committing if it returns nil.
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, ignoreDone(tx.Rollback()))
	}
	return tx.Commit()
}

func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}
