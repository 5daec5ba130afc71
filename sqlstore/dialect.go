package sqlstore

import (
	"context"
	"strconv"
	"strings"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/audit"
)

// The dialect seam. The store's logic — guards, defaults, error wording,
// the statement builders — is written once, in [Store]'s methods, above a
// dialect that runs statements on one backend and supplies the few things
// that really differ between SQLite and PostgreSQL. River is built the same
// way, above riverdriver.Driver. Statements are written with ? placeholders;
// the PostgreSQL dialect rebinds them to $1, $2, ….

// querier runs statements: the database, or one of its transactions.
type querier interface {
	// exec runs a statement and returns the number of rows it changed.
	exec(ctx context.Context, stmt string, args ...any) (int64, error)
	// query runs a statement returning rows, which the caller closes.
	query(ctx context.Context, stmt string, args ...any) (rows, error)
	// queryRow runs a statement returning at most one row. Its Scan
	// fails with an error that is sql.ErrNoRows if there was none.
	queryRow(ctx context.Context, stmt string, args ...any) scanner
}

// tx is a transaction, which can also insert River jobs.
type tx interface {
	querier
	// enqueue inserts the River jobs of runs runIDs in the transaction,
	// in one statement, and returns their ids in the same order.
	enqueue(ctx context.Context, runIDs ...string) ([]int64, error)
	// cancelJob cancels River job jobID in the transaction.
	cancelJob(ctx context.Context, jobID int64) error
}

// dialect is one backend: its connections and the SQL that differs.
type dialect interface {
	querier
	// inTx runs fn in a transaction, committing if it returns nil and
	// rolling back otherwise.
	inTx(ctx context.Context, fn func(tx) error) error
	close() error
	// migrate applies andon's migrations and River's.
	migrate(ctx context.Context) error
	// queue returns River workers on the database; adopt gives a job to
	// every queued run without one.
	queue(opts QueueOptions, adopt func(context.Context) error) agent.Queue
	// cancelJob cancels River job id.
	cancelJob(ctx context.Context, jobID int64) error

	// oneTrip is the querier for the statements on a cancel's path (the
	// watcher's reads of run rows, the cancel by token): each goes to the
	// server in one round trip on any connection, one that has never run
	// it included (one_trip.go). SQLite's is the dialect itself.
	oneTrip() querier

	// idIn returns the condition and its one argument that match a
	// column against the list ids, whatever its length: a single
	// parameter, so there is no bound-parameter limit to chunk around.
	idIn(ids []string) (cond string, arg any)
	// pairIn returns the condition and its arguments that match a pair of
	// columns, (a, b) IN …, against the pairs (as[i], bs[i]), whatever
	// their number: as idIn, no bound-parameter limit applies.
	pairIn(as, bs []string) (cond string, args []any)
	// canAnnounce reports whether announcing works: whether a statement
	// can tell the other processes on the database of the runs it
	// cancels (PostgreSQL's NOTIFY; SQLite has no such thing).
	canAnnounce() bool
	// announcing wraps update, an UPDATE of runs … RETURNING id, in a
	// statement that returns the same ids and announces each as
	// cancelled (postgres_notify.go), delivered only if it commits. A
	// dialect that cannot announce returns update as it is.
	announcing(update string) string
	// claimLock is the locking clause of the claim's candidate query.
	claimLock() string
	// hostsArg encodes a secret's hosts for the hosts column, and
	// hostsDest is the scan destination that decodes them into dst.
	hostsArg(hosts []string) any
	hostsDest(dst *[]string) any
	// stepInsert is the statement of a guarded step append; see
	// [Store.StepAppend] for its arguments and what it returns.
	stepInsert() string
	// stepRecord is the one statement of a StepRecord (step_record.go)
	// followed by then (nil: nothing), or "" where a statement cannot
	// both insert and update (SQLite): then the store runs them in a
	// transaction. It takes stepInsert's arguments, then then's, and
	// returns the step's seq, the status the append's guard read, and
	// whether then's UPDATE changed the row.
	stepRecord(then *stepThen) string
	// textArg encodes a step's text, stored whole whatever its bytes.
	textArg(text string) any
	// lockSecrets keeps secrets from being written by others until tx
	// ends.
	lockSecrets(ctx context.Context, tx tx) error
	// lockHeads reads the audit log's heads in tx, keeping any other
	// append from reading them until tx ends.
	lockHeads(ctx context.Context, tx tx) (audit.Heads, error)
	// writeAudit appends row and moves the head and the mark to head.
	writeAudit(ctx context.Context, tx tx, row audit.Row, head audit.Head) error
}

// rebind rewrites the ? placeholders of stmt as $1, $2, … for
// PostgreSQL. A statement without arguments is left as written: migration
// files, which may hold a ? in a comment, run that way. andon's
// statements hold no ? in a literal or a comment.
func rebind(stmt string, nargs int) string {
	if nargs == 0 || !strings.Contains(stmt, "?") {
		return stmt
	}
	var b strings.Builder
	b.Grow(len(stmt) + 2*nargs)
	n := 0
	for {
		i := strings.IndexByte(stmt, '?')
		if i < 0 {
			b.WriteString(stmt)
			return b.String()
		}
		n++
		b.WriteString(stmt[:i])
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(n))
		stmt = stmt[i+1:]
	}
}
