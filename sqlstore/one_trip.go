package sqlstore

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Statements in one round trip. pgx's default mode prepares a statement the
// first time a connection runs it: a Parse and Describe, one round trip, and
// only then the Bind and Execute, a second. A connection runs a statement
// warm after that, but the statements on a cancel's path are rare on each
// of a pool's connections (an operator's cancel, a hinted read of a run
// row) and every connection is new again after its lifetime, so across
// machines they often paid the extra trip: at 10 ms RTT, statement logs of
// BenchmarkCancelAcrossNetwork showed the worker's hinted read taking
// 19–25 ms instead of 11–13 and serve's cancel reaching the server 18 ms
// after the request instead of 5, each on the first use of the statement
// on that backend. pgx's exec mode sends the statement's text, its
// parameters (as text, their types left to the server to infer from the
// statement) and the Execute together: one round trip whatever the
// connection has run before, for a parse and plan on the server each time,
// which for these statements costs far less than a round trip.

// oneTrip is the querier of the pool whose statements go in one round trip.
func (d *postgres) oneTrip() querier {
	return pgQuerier{oneTripRunner{d.pool}, d.n}
}

// oneTripRunner runs every statement of r in pgx's exec mode.
type oneTripRunner struct{ r pgRunner }

func (o oneTripRunner) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return o.r.Exec(ctx, sql, oneTripArgs(args)...)
}

func (o oneTripRunner) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return o.r.Query(ctx, sql, oneTripArgs(args)...)
}

func (o oneTripRunner) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return o.r.QueryRow(ctx, sql, oneTripArgs(args)...)
}

// oneTripArgs puts the mode before args, where pgx reads it.
func oneTripArgs(args []any) []any {
	return append([]any{pgx.QueryExecModeExec}, args...)
}
