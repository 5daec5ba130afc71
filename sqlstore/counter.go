package sqlstore

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// StatementCounter counts what a [Store] asks of its database: every
// statement andon's own code sends through the dialect seam, and every
// transaction it opens there. On PostgreSQL it also counts every query
// the pool's connections run, River's included (a pgx tracer), so that
// the engine's share is visible too. It is for measuring the store's cost
// (statements per run, per cancel), not for production metrics. The zero
// value is ready; it is safe for concurrent use. Pass it with
// [OpenCounter].
type StatementCounter struct {
	stmts, txs, writes, pool atomic.Uint64
}

// Counts is one reading of a [StatementCounter].
type Counts struct {
	// Statements is every statement andon sent through the dialect,
	// inside transactions or not (BEGIN and COMMIT are not counted).
	Statements uint64
	// Writes is the part of Statements that changes rows (INSERT, UPDATE,
	// DELETE, including UPDATE … RETURNING).
	Writes uint64
	// Transactions is every transaction andon opened.
	Transactions uint64
	// PoolQueries, on PostgreSQL, is every query any connection of the
	// pool ran: andon's, River's, LISTEN and NOTIFY. Zero on SQLite.
	PoolQueries uint64
}

// Sub returns c minus an earlier reading.
func (c Counts) Sub(earlier Counts) Counts {
	return Counts{c.Statements - earlier.Statements, c.Writes - earlier.Writes,
		c.Transactions - earlier.Transactions, c.PoolQueries - earlier.PoolQueries}
}

// Read returns the counts so far.
func (c *StatementCounter) Read() Counts {
	return Counts{c.stmts.Load(), c.writes.Load(), c.txs.Load(), c.pool.Load()}
}

// OpenCounter makes [Open] count the store's statements in c.
func OpenCounter(c *StatementCounter) OpenOption {
	return func(cfg *openConfig) { cfg.counter = c }
}

// statement counts one statement; a nil counter counts nothing.
func (c *StatementCounter) statement(stmt string) {
	if c == nil {
		return
	}
	c.stmts.Add(1)
	if isWrite(stmt) {
		c.writes.Add(1)
	}
}

func (c *StatementCounter) transaction() {
	if c != nil {
		c.txs.Add(1)
	}
}

// isWrite reports whether stmt changes rows, by its first keyword.
func isWrite(stmt string) bool {
	s := strings.TrimLeft(stmt, " \t\r\n(")
	for _, verb := range []string{"INSERT", "UPDATE", "DELETE"} {
		if len(s) >= len(verb) && strings.EqualFold(s[:len(verb)], verb) {
			return true
		}
	}
	return false
}

// poolTracer counts every query of a pgx pool.
type poolTracer struct{ c *StatementCounter }

func (t poolTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	t.c.pool.Add(1)
	return ctx
}

func (poolTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
