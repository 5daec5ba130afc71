package sqlstore

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/riverqueue/river/riverdriver/riversqlite"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/audit"
)

// BusyTimeout is how long a statement waits for another connection's or
// process's write lock before failing.
const BusyTimeout = 10 * time.Second

//go:embed migrations/*.sql
var migrations embed.FS

// sqlite is the SQLite dialect: one file, modernc.org/sqlite, WAL and a
// busy timeout. Every transaction takes the write lock at BEGIN
// (_txlock=immediate), and a single write statement takes it before it
// reads, so its guard and its change are atomic across connections and
// processes: that is what the locking methods below rely on.
//
// Writes — andon's and River's — share one connection (db), so that in
// this process they queue in Go, each handed the connection the moment
// the one before it is done. With a connection each, they would wait in
// SQLite's busy handler instead, which sleeps (1, 2, 5 … 100 ms) rather
// than waking when the lock is free: under a storm of 16 cancels that made
// a cancel take half a second. Reads (a statement starting with SELECT,
// outside a transaction) go to a pool of their own (read): in WAL mode
// they never wait for the writer, and they see every write that has
// returned. Another process on the file still meets this one at the busy
// handler, once per transaction. Every connection keeps the statements it
// runs prepared (sqlite_conn.go).
type sqlite struct {
	sqliteQuerier
	db   *sql.DB // the writer: one connection
	read *sql.DB // readers
	jobs *jobs[*sql.Tx]
	// checkpointer copies the log back into the file, so that the writer
	// never does (sqlite_checkpoint.go).
	checkpointer *checkpointer
}

// readConns bounds the reader connections: each keeps a page cache.
const readConns = 8

// openSQLite opens (creating if needed, with mode 0600) the SQLite
// database at path.
func openSQLite(path string, cfg openConfig) (*sqlite, error) {
	if err := prepareFile(path, cfg.logger); err != nil {
		return nil, fmt.Errorf("sqlstore: creating %s: %w", path, err)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(BusyTimeout.Milliseconds(), 10)+")")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(ON)")
	checkpointDSN := "file:" + path + "?" + q.Encode()
	q.Add("_pragma", "wal_autocheckpoint(0)") // the checkpointer's job (sqlite_checkpoint.go)
	q.Set("_txlock", "immediate")             // take the write lock at BEGIN: no upgrade deadlocks
	db, err := openPreparing("file:" + path + "?" + q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlstore: opening %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(0)
	q.Del("_txlock")
	q.Add("_pragma", "query_only(1)")
	read, err := openPreparing("file:" + path + "?" + q.Encode())
	if err != nil {
		return nil, errors.Join(fmt.Errorf("sqlstore: opening %s: %w", path, err), db.Close())
	}
	read.SetMaxOpenConns(readConns)
	read.SetMaxIdleConns(readConns)
	j, err := newJobs(riversqlite.New(db))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("sqlstore: %s: %w", path, err), db.Close(), read.Close())
	}
	ckpt, err := sql.Open("sqlite", checkpointDSN) // connects when first used
	if err != nil {
		return nil, errors.Join(fmt.Errorf("sqlstore: opening %s: %w", path, err), db.Close(), read.Close())
	}
	ckpt.SetMaxOpenConns(1)
	return &sqlite{
		sqliteQuerier: sqliteQuerier{routed{write: db, read: read}, cfg.counter, &writeGate{}},
		db:            db, read: read, jobs: j,
		checkpointer: startCheckpointer(ckpt, path+"-wal", checkpointInterval, cfg.logger),
	}, nil
}

// routed sends a statement that starts with SELECT to the readers and
// every other to the writer.
type routed struct {
	write, read *sql.DB
}

func (r routed) pick(stmt string) *sql.DB {
	if isSelect(stmt) {
		return r.read
	}
	return r.write
}

// isSelect reports whether stmt starts with SELECT: a read.
func isSelect(stmt string) bool {
	s := strings.TrimLeft(stmt, " \t\r\n")
	return len(s) >= 6 && strings.EqualFold(s[:6], "SELECT")
}

func (r routed) ExecContext(ctx context.Context, stmt string, args ...any) (sql.Result, error) {
	return r.write.ExecContext(ctx, stmt, args...)
}

func (r routed) QueryContext(ctx context.Context, stmt string, args ...any) (*sql.Rows, error) {
	return r.pick(stmt).QueryContext(ctx, stmt, args...)
}

func (r routed) QueryRowContext(ctx context.Context, stmt string, args ...any) *sql.Row {
	return r.pick(stmt).QueryRowContext(ctx, stmt, args...)
}

func (d *sqlite) close() error {
	return errors.Join(d.checkpointer.close(), d.read.Close(), d.db.Close())
}

func (d *sqlite) inTx(ctx context.Context, fn func(tx) error) error {
	if err := d.gate.acquire(ctx); err != nil {
		return err
	}
	defer d.gate.release()
	t, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	d.n.transaction()
	if err := fn(&sqliteTx{sqliteQuerier{t, d.n, nil}, t, d.jobs}); err != nil {
		return errors.Join(err, ignoreDone(t.Rollback()))
	}
	return t.Commit()
}

func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}

// migrate applies andon's migrations and River's in one transaction,
// under the write lock its BEGIN takes.
func (d *sqlite) migrate(ctx context.Context) error {
	return d.inTx(ctx, func(t tx) error {
		if _, err := t.exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			name       TEXT    NOT NULL,
			applied_at INTEGER NOT NULL
		) STRICT`); err != nil {
			return fmt.Errorf("creating schema_migrations: %w", err)
		}
		if err := applyMigrations(ctx, t, migrations, "migrations"); err != nil {
			return err
		}
		return d.jobs.migrateTx(ctx, t.(*sqliteTx).tx)
	})
}

func (d *sqlite) queue(opts QueueOptions, adopt func(context.Context) error) agent.Queue {
	return &queue[*sql.Tx]{jobs: d.jobs, opts: opts, adopt: adopt}
}

// cancelJob cancels a job; the worker holding it hears of it through
// riversqlite's notification table.
func (d *sqlite) cancelJob(ctx context.Context, jobID int64) error { return d.jobs.cancel(ctx, jobID) }

// oneTrip: SQLite has no round trips, so no statement needs a mode of its
// own.
func (d *sqlite) oneTrip() querier { return d.sqliteQuerier }

// idIn sends the ids as one JSON array, unpacked by json_each.
func (d *sqlite) idIn(ids []string) (string, any) {
	list, _ := json.Marshal(ids) // a []string always marshals
	return `IN (SELECT value FROM json_each(?))`, string(list)
}

// pairIn sends the pairs as one JSON array of two-element arrays.
func (d *sqlite) pairIn(as, bs []string) (string, []any) {
	pairs := make([][2]string, len(as))
	for i := range as {
		pairs[i] = [2]string{as[i], bs[i]}
	}
	list, _ := json.Marshal(pairs) // strings always marshal
	return `IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))`, []any{string(list)}
}

// claimLock is empty: the claim's UPDATE holds the write lock.
func (d *sqlite) claimLock() string { return "" }

// SQLite has no NOTIFY: the worker holding a cancelled run hears of it
// from River (node's announcer cancels the job) or its watcher's poll.
func (d *sqlite) canAnnounce() bool               { return false }
func (d *sqlite) announcing(update string) string { return update }

// hostsArg stores the hosts as a JSON array of text.
func (d *sqlite) hostsArg(hosts []string) any {
	b, _ := json.Marshal(nonNil(hosts)) // a []string always marshals
	return string(b)
}

func (d *sqlite) hostsDest(dst *[]string) any { return jsonHosts{dst} }

// jsonHosts scans a JSON array of text.
type jsonHosts struct{ dst *[]string }

func (h jsonHosts) Scan(src any) error {
	var b []byte
	switch v := src.(type) {
	case string:
		b = []byte(v)
	case []byte:
		b = v
	default:
		return fmt.Errorf("hosts column: %T is not text", src)
	}
	if err := json.Unmarshal(b, h.dst); err != nil {
		return fmt.Errorf("hosts column: %w", err)
	}
	return nil
}

// stepInsert picks seq (the run's last plus one) in the statement that
// inserts the step. The statement takes the write lock before it reads, so
// nothing moves the lease between the check and the insert, and
// concurrent appends to a run get distinct, consecutive numbers.
func (d *sqlite) stepInsert() string {
	return `INSERT INTO steps (` + stepColumns + `)
		SELECT id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM steps WHERE run_id = runs.id), ?, ?, ?, ?, ?, ?, ?, ?
		FROM runs WHERE id = ? AND ` + fmt.Sprintf(heldForSteps, "?") + `
		RETURNING seq`
}

// stepRecord: SQLite has no data-modifying WITH, so a StepRecord is a
// transaction of the statements; on the one local writer they cost no
// round trips.
func (d *sqlite) stepRecord(*stepThen) string { return "" }

// textArg is the text as it is: the column is TEXT, which takes any bytes.
func (d *sqlite) textArg(text string) any { return text }

// lockSecrets does nothing: the transaction holds the write lock.
func (d *sqlite) lockSecrets(context.Context, tx) error { return nil }

// lockHeads reads the heads: the transaction holds the write lock, so
// appends from other connections and processes wait.
func (d *sqlite) lockHeads(ctx context.Context, t tx) (audit.Heads, error) { return readHeads(ctx, t) }

// writeAudit inserts the row, then moves the head and the mark.
func (d *sqlite) writeAudit(ctx context.Context, t tx, row audit.Row, head audit.Head) error {
	if _, err := t.exec(ctx, `INSERT INTO audit_log (`+auditColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		auditArgs(row)...); err != nil {
		return fmt.Errorf("sqlstore: appending audit row: %w", err)
	}
	for _, table := range []string{"audit_head", "audit_mark"} {
		if _, err := t.exec(ctx, `INSERT INTO `+table+` (id, seq, first_seq, length, mac, seal) VALUES (1, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, first_seq = excluded.first_seq,
				length = excluded.length, mac = excluded.mac, seal = excluded.seal`,
			head.Seq, head.First, head.Length, head.MAC, head.Seal); err != nil {
			return fmt.Errorf("sqlstore: moving %s: %w", table, err)
		}
	}
	return nil
}

// sqliteTx is a transaction of the SQLite dialect.
type sqliteTx struct {
	sqliteQuerier
	tx   *sql.Tx
	jobs *jobs[*sql.Tx]
}

func (t *sqliteTx) enqueue(ctx context.Context, runIDs ...string) ([]int64, error) {
	return t.jobs.enqueue(ctx, t.tx, runIDs...)
}

func (t *sqliteTx) cancelJob(ctx context.Context, jobID int64) error {
	return t.jobs.cancelTx(ctx, t.tx, jobID)
}

// sqlRunner is what a *sql.DB and a *sql.Tx have in common.
type sqlRunner interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// sqliteQuerier is the querier of a database or a transaction.
type sqliteQuerier struct {
	r sqlRunner
	n *StatementCounter // nil: nothing counted
	// gate, on the database's querier, orders its writes (write_gate.go);
	// nil in a transaction, which holds the gate from BEGIN to its end.
	gate *writeGate
}

// enter takes the write gate for stmt if it needs it; done gives it back.
func (q sqliteQuerier) enter(ctx context.Context, stmt string) (done func(), err error) {
	if q.gate == nil || isSelect(stmt) {
		return func() {}, nil
	}
	if err := q.gate.acquire(ctx); err != nil {
		return nil, err
	}
	return sync.OnceFunc(q.gate.release), nil
}

func (q sqliteQuerier) exec(ctx context.Context, stmt string, args ...any) (int64, error) {
	q.n.statement(stmt)
	done, err := q.enter(ctx, stmt)
	if err != nil {
		return 0, err
	}
	defer done()
	res, err := q.r.ExecContext(ctx, stmt, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (q sqliteQuerier) query(ctx context.Context, stmt string, args ...any) (rows, error) {
	q.n.statement(stmt)
	done, err := q.enter(ctx, stmt)
	if err != nil {
		return nil, err
	}
	rs, err := q.r.QueryContext(ctx, stmt, args...)
	if err != nil {
		done()
		return nil, err
	}
	return gatedRows{rs, done}, nil
}

func (q sqliteQuerier) queryRow(ctx context.Context, stmt string, args ...any) scanner {
	q.n.statement(stmt)
	done, err := q.enter(ctx, stmt)
	if err != nil {
		return errRow{err}
	}
	return gatedRow{q.r.QueryRowContext(ctx, stmt, args...), done}
}

// gatedRows gives the write gate back when the rows are closed (the
// statement is over then).
type gatedRows struct {
	*sql.Rows
	done func()
}

func (r gatedRows) Close() error {
	defer r.done()
	return r.Rows.Close()
}

// gatedRow gives the write gate back once scanned.
type gatedRow struct {
	row  *sql.Row
	done func()
}

func (r gatedRow) Scan(dest ...any) error {
	defer r.done()
	return r.row.Scan(dest...)
}

// errRow is a row that only fails.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
