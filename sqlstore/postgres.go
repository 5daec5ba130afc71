package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/audit"
)

// DefaultPoolSize is the most connections a store keeps open to
// PostgreSQL, unless its DSN says pool_max_conns=N.
const DefaultPoolSize = 16

// postgres is the PostgreSQL dialect (pgx/v5), for deployments where many
// worker processes on many machines share one database. Times are stored
// as Unix nanoseconds (bigint), as on SQLite, so every time.Time reads back
// exactly as it was written and the zero time is 0.
//
// Under READ COMMITTED, a guarded UPDATE that finds its row locked by a
// concurrent transition waits for it, then evaluates the guard again on the
// row as that transition left it (PostgreSQL's re-check of an updated row):
// of two cancels, the second sees status cancelled and changes nothing. Where
// a statement must read before it writes, the locking methods below take the
// row or table locks that SQLite's write lock gives for free.
type postgres struct {
	pgQuerier
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
// size (pool_max_conns=N, else [DefaultPoolSize]); see [pgxpool.ParseConfig].
// Of opts, [OpenCounter] applies. Close the Store when
// done.
func OpenPostgres(ctx context.Context, dsn string, opts ...OpenOption) (*Store, error) {
	var cfg openConfig
	for _, o := range opts {
		o(&cfg)
	}
	d, err := openPostgres(ctx, dsn, cfg)
	if err != nil {
		return nil, err
	}
	if err := d.migrate(ctx); err != nil {
		d.pool.Close()
		return nil, fmt.Errorf("sqlstore: migrating PostgreSQL %s: %w", where(d.pool.Config()), err)
	}
	return newStore(d), nil
}

// openPostgres connects to the database that dsn names.
func openPostgres(ctx context.Context, dsn string, oc openConfig) (*postgres, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors redact the password.
		return nil, fmt.Errorf("sqlstore: parsing the PostgreSQL DSN: %w", err)
	}
	if oc.counter != nil {
		cfg.ConnConfig.Tracer = poolTracer{oc.counter}
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		// pgx's default, max(4, CPUs), makes every run's step, every
		// cancel and River's work wait for one of four connections:
		// with a thousand runs in flight, a cancel waited seconds for
		// its turn.
		cfg.MaxConns = max(cfg.MaxConns, DefaultPoolSize)
	}
	// No ping before a statement. pgxpool's default pings a connection
	// idle for a second before handing it out: one more round trip,
	// before the statement, on exactly the connections a rare request —
	// an operator's cancel — gets; across machines, that doubled the
	// cost of each of the cancel's statements. A connection that died
	// meanwhile instead fails the statement sent on it (the caller gets
	// the error; a cancel's caller can repeat it: the guard makes a
	// repeat harmless), and pgx closes it, so the pool destroys it when
	// it is released and dials a new one for the next statement.
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: connecting to PostgreSQL %s: %w", where(cfg), err)
	}
	j, err := newJobs(riverpgxv5.New(pool))
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("sqlstore: PostgreSQL %s: %w", where(cfg), err)
	}
	return &postgres{pgQuerier: pgQuerier{pool, oc.counter}, pool: pool, jobs: j}, nil
}

// where names a database for error messages, without credentials.
func where(cfg *pgxpool.Config) string {
	return fmt.Sprintf("%s:%d/%s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
}

// close closes every connection of the pool, waiting for those in use to
// be returned.
func (d *postgres) close() error {
	d.pool.Close()
	return nil
}

func (d *postgres) inTx(ctx context.Context, fn func(tx) error) error {
	t, err := d.pool.Begin(ctx)
	if err != nil {
		return err
	}
	d.n.transaction()
	if err := fn(&pgTx{pgQuerier{t, d.n}, t, d.jobs}); err != nil {
		return errors.Join(err, ignoreClosed(t.Rollback(ctx)))
	}
	return t.Commit(ctx)
}

func ignoreClosed(err error) error {
	if errors.Is(err, pgx.ErrTxClosed) {
		return nil
	}
	return err
}

func (d *postgres) queue(opts QueueOptions, adopt func(context.Context) error) agent.Queue {
	return &queue[pgx.Tx]{jobs: d.jobs, opts: opts, adopt: adopt}
}

// cancelJob cancels a job; River tells the worker holding it by NOTIFY.
func (d *postgres) cancelJob(ctx context.Context, jobID int64) error {
	return d.jobs.cancel(ctx, jobID)
}

// idIn sends the ids as one text[] parameter.
func (d *postgres) idIn(ids []string) (string, any) { return `= ANY(?)`, ids }

// pairIn sends the pairs as two text[] parameters, zipped by unnest.
func (d *postgres) pairIn(as, bs []string) (string, []any) {
	return `IN (SELECT * FROM unnest(?::text[], ?::text[]))`, []any{as, bs}
}

// claimLock: the candidate is selected FOR NO KEY UPDATE SKIP LOCKED, so
// concurrent claimers never wait for each other and never take the same
// run. (NO KEY: the lock the UPDATE takes anyway, which a step append's
// foreign-key check does not conflict with.) The claim can therefore pass
// over a queued run that another transaction holds for the instant of its
// own statement. OF runs: the candidate comes from active_runs joined to
// runs, and it is the run row that is locked, as every writer of a run
// locks it first (its active_runs row after, by trigger), so that a claim
// and a cancel of one run cannot each hold what the other waits for.
func (d *postgres) claimLock() string { return ` FOR NO KEY UPDATE OF runs SKIP LOCKED` }

// hostsArg: the column is a text[].
func (d *postgres) hostsArg(hosts []string) any { return nonNil(hosts) }
func (d *postgres) hostsDest(dst *[]string) any { return dst }

// stepInsert checks the lease on the run row, bumps the run's counter in
// step_seqs (creating it at 1 on the first step) and inserts the step with
// the new number, in one statement. The check locks the run row FOR SHARE
// until the statement commits, so the lease cannot move between the check
// and the insert (a transition of the run waits for the append, at most one
// insert; an append waits for a transition under way and checks the row as
// it leaves it). The bump locks the counter row, so concurrent appends to a
// run get distinct, consecutive numbers, and a failed insert gives its
// number back. Its placeholders are numbered to take the arguments in the
// order SQLite's statement does.
func (d *postgres) stepInsert() string {
	return `WITH held AS (
			SELECT id FROM runs WHERE id = $9 AND ` + fmt.Sprintf(heldForSteps, "$10") + `
			FOR SHARE),
		next AS (
			INSERT INTO step_seqs AS c (run_id, last_seq)
				SELECT id, 1 FROM held
			ON CONFLICT (run_id) DO UPDATE SET last_seq = c.last_seq + 1
			RETURNING run_id, last_seq)
		INSERT INTO steps (` + stepColumns + `)
			SELECT run_id, last_seq, $1, $2, $3, $4, $5, $6, $7, $8 FROM next
		RETURNING seq`
}

// stepRecord is stepInsert, whose guard also returns the status it
// locked, then then's UPDATE, which runs only if the step went in
// (EXISTS on the insert) and, since the guard holds the row locked until
// the statement commits, on the row as the guard read it: a cancel
// waits for the statement, or the statement for the cancel and then reads
// cancelled. then's placeholders follow the step's, from $11.
func (d *postgres) stepRecord(then *stepThen) string {
	// With an UPDATE to follow, the guard locks the row as the UPDATE
	// will: two statements that each held it FOR SHARE and then wanted to
	// update it (a boundary and a concurrent append of the run) would
	// deadlock.
	lock := `FOR SHARE`
	if then != nil {
		lock = `FOR NO KEY UPDATE`
	}
	held := `WITH held AS (
			SELECT id, status FROM runs WHERE id = $9 AND ` + fmt.Sprintf(heldForSteps, "$10") + `
			` + lock + `),
		next AS (
			INSERT INTO step_seqs AS c (run_id, last_seq)
				SELECT id, 1 FROM held
			ON CONFLICT (run_id) DO UPDATE SET last_seq = c.last_seq + 1
			RETURNING run_id, last_seq),
		appended AS (
			INSERT INTO steps (` + stepColumns + `)
				SELECT run_id, last_seq, $1, $2, $3, $4, $5, $6, $7, $8 FROM next
			RETURNING seq)`
	if then == nil {
		return held + `
		SELECT appended.seq, held.status, false FROM appended, held`
	}
	set := then.set
	for n := 11; strings.Contains(set, "?"); n++ {
		set = strings.Replace(set, "?", "$"+strconv.Itoa(n), 1)
	}
	return held + `,
		followed AS (
			UPDATE runs SET ` + set + `
			WHERE id = $9 AND ` + then.guard + ` AND lease_owner = $10 AND EXISTS (SELECT 1 FROM appended)
			RETURNING id)
		SELECT appended.seq, held.status, EXISTS (SELECT 1 FROM followed) FROM appended, held`
}

// textArg: the column is bytea, since a step's text may hold a NUL or a
// split UTF-8 sequence, which PostgreSQL's text refuses.
func (d *postgres) textArg(text string) any { return []byte(text) }

// lockSecrets locks the table against writes (SHARE ROW EXCLUSIVE: reads
// go on, another rekey or a put waits), so that, as on SQLite, no record is
// written between a rekey's read and its rewrite.
func (d *postgres) lockSecrets(ctx context.Context, t tx) error {
	if _, err := t.exec(ctx, `LOCK TABLE secrets IN SHARE ROW EXCLUSIVE MODE`); err != nil {
		return fmt.Errorf("sqlstore: locking secrets for a rekey: %w", err)
	}
	return nil
}

// lockHeads locks the head's row with SELECT … FOR UPDATE, so an append
// from any other connection, process or machine waits there until this one
// commits, and then reads the head this one wrote: no two appends see the
// same head. A head row that was deleted is put back first (empty), so that
// there is always one to lock. Then it reads the head and the mark: two
// statements, since a statement that waited for the lock sees the new
// version of the row it locked, but of the mark it would see the version
// from before the wait, the one the last append replaced.
func (d *postgres) lockHeads(ctx context.Context, t tx) (audit.Heads, error) {
	for range 2 {
		n, err := t.exec(ctx, `SELECT 1 FROM audit_head WHERE id = 1 FOR UPDATE`)
		if err != nil {
			return audit.Heads{}, fmt.Errorf("sqlstore: locking the audit head: %w", err)
		}
		if n == 1 {
			return readHeads(ctx, t)
		}
		if _, err := t.exec(ctx, `INSERT INTO audit_head (id, seq) VALUES (1, 0) ON CONFLICT (id) DO NOTHING`); err != nil {
			return audit.Heads{}, fmt.Errorf("sqlstore: putting back the audit head: %w", err)
		}
	}
	return audit.Heads{}, fmt.Errorf("sqlstore: locking the audit head: %w", errNoAuditHead)
}

// errNoAuditHead means the audit_head row vanished again as soon as it was
// put back.
var errNoAuditHead = errors.New("the audit_head row is missing")

// writeAudit writes the row, the head and the mark in one statement, so
// that an append costs the round trips it did before there was a mark.
func (d *postgres) writeAudit(ctx context.Context, t tx, row audit.Row, head audit.Head) error {
	if _, err := t.exec(ctx, `WITH
		appended AS (INSERT INTO audit_log (`+auditColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)),
		moved AS (UPDATE audit_head SET seq = $14, first_seq = $15, length = $16, mac = $17, seal = $18 WHERE id = 1)
		INSERT INTO audit_mark (id, seq, first_seq, length, mac, seal) VALUES (1, $14, $15, $16, $17, $18)
		ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, first_seq = excluded.first_seq,
			length = excluded.length, mac = excluded.mac, seal = excluded.seal`,
		append(auditArgs(row), head.Seq, head.First, head.Length, head.MAC, head.Seal)...); err != nil {
		return fmt.Errorf("sqlstore: appending audit row: %w", err)
	}
	return nil
}

// pgTx is a transaction of the PostgreSQL dialect.
type pgTx struct {
	pgQuerier
	tx   pgx.Tx
	jobs *jobs[pgx.Tx]
}

func (t *pgTx) enqueue(ctx context.Context, runIDs ...string) ([]int64, error) {
	return t.jobs.enqueue(ctx, t.tx, runIDs...)
}

func (t *pgTx) cancelJob(ctx context.Context, jobID int64) error {
	return t.jobs.cancelTx(ctx, t.tx, jobID)
}

// pgRunner is what a pool and a transaction have in common.
type pgRunner interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// pgQuerier is the querier of a pool or a transaction. It rebinds every
// statement's ? placeholders. A statement without arguments goes out as
// written, which pgx sends with the simple protocol: a migration file of
// several statements runs that way.
type pgQuerier struct {
	r pgRunner
	n *StatementCounter // nil: nothing counted
}

func (q pgQuerier) exec(ctx context.Context, stmt string, args ...any) (int64, error) {
	q.n.statement(stmt)
	tag, err := q.r.Exec(ctx, rebind(stmt, len(args)), args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (q pgQuerier) query(ctx context.Context, stmt string, args ...any) (rows, error) {
	q.n.statement(stmt)
	rs, err := q.r.Query(ctx, rebind(stmt, len(args)), args...)
	if err != nil {
		return nil, err
	}
	return pgRows{rs}, nil
}

// queryRow: pgx.ErrNoRows is sql.ErrNoRows to errors.Is.
func (q pgQuerier) queryRow(ctx context.Context, stmt string, args ...any) scanner {
	q.n.statement(stmt)
	return q.r.QueryRow(ctx, rebind(stmt, len(args)), args...)
}

// pgRows gives pgx.Rows the Close of [rows].
type pgRows struct{ pgx.Rows }

func (r pgRows) Close() error {
	r.Rows.Close()
	return nil
}
