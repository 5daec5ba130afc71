package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	modernc "modernc.org/sqlite"
)

// SQLite connections that keep what they run prepared. SQLite parses a
// statement every time it is run unprepared, and under a storm parsing was
// the largest share of the process's CPU — on the one writer connection,
// time every other write waits for. Preparing at the driver seam, per
// connection, covers every statement sent on it: andon's, inside and
// outside transactions, and River's own (its job completer re-ran one
// parse-heavy statement per finished job), which andon cannot prepare.
//
// Only statements with arguments are kept (the migrations, which have
// none, may hold several statements in one string), at most maxStmts per
// connection; past that, a statement runs as it is. A kept statement in
// use — its rows not yet closed — is not shared: a second use meanwhile
// runs unprepared, so it never resets rows still being read.

// maxStmts bounds the statements one connection keeps prepared.
const maxStmts = 256

// preparingConnector opens modernc connections at dsn that keep their
// statements prepared.
type preparingConnector struct {
	dsn string
	drv *modernc.Driver
}

// openPreparing opens a database of connections at dsn that keep their
// statements prepared, with the driver registered as "sqlite" (any
// functions registered with it included).
func openPreparing(dsn string) (*sql.DB, error) {
	registered, err := sql.Open("sqlite", dsn) // connects to nothing
	if err != nil {
		return nil, err
	}
	drv, ok := registered.Driver().(*modernc.Driver)
	registered.Close()
	if !ok {
		return nil, fmt.Errorf("sqlstore: the driver registered as sqlite is a %T", registered.Driver())
	}
	return sql.OpenDB(preparingConnector{dsn: dsn, drv: drv}), nil
}

func (c preparingConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	inner, ok := conn.(sqliteConn)
	if !ok { // every modernc connection is one; a new version might not be
		return nil, errors.Join(errors.New("sqlstore: the SQLite driver's connection lacks a context method"), conn.Close())
	}
	return &preparingConn{sqliteConn: inner, stmts: map[string]*keptStmt{}}, nil
}

func (c preparingConnector) Driver() driver.Driver { return c.drv }

// sqliteConn is what database/sql uses of a modernc connection.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.SessionResetter
	driver.Validator
	driver.Pinger
}

// preparingConn is a connection with its kept statements. database/sql
// uses a connection from one goroutine at a time, so it needs no lock.
type preparingConn struct {
	sqliteConn
	stmts map[string]*keptStmt
}

// keptStmt is a prepared statement and whether it is in use.
type keptStmt struct {
	stmt interface {
		driver.Stmt
		driver.StmtExecContext
		driver.StmtQueryContext
	}
	busy bool
}

// kept returns query's kept statement, marked busy, preparing it on first
// use; nil means run query as it is.
func (c *preparingConn) kept(ctx context.Context, query string, nargs int) *keptStmt {
	if nargs == 0 {
		return nil
	}
	if k := c.stmts[query]; k != nil {
		if k.busy {
			return nil
		}
		k.busy = true
		return k
	}
	if len(c.stmts) >= maxStmts {
		return nil
	}
	ps, err := c.PrepareContext(ctx, query)
	if err != nil {
		return nil // running it as it is reports why
	}
	stmt, ok := ps.(interface {
		driver.Stmt
		driver.StmtExecContext
		driver.StmtQueryContext
	})
	if !ok {
		ps.Close()
		return nil
	}
	k := &keptStmt{stmt: stmt, busy: true}
	c.stmts[query] = k
	return k
}

func (c *preparingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	k := c.kept(ctx, query, len(args))
	if k == nil {
		return c.sqliteConn.ExecContext(ctx, query, args)
	}
	defer func() { k.busy = false }()
	return k.stmt.ExecContext(ctx, args)
}

func (c *preparingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	k := c.kept(ctx, query, len(args))
	if k == nil {
		return c.sqliteConn.QueryContext(ctx, query, args)
	}
	rs, err := k.stmt.QueryContext(ctx, args)
	if err != nil {
		k.busy = false
		return nil, err
	}
	typed, ok := rs.(sqliteRows)
	if !ok { // every modernc rows is one; a new version might not be
		rs.Close()
		k.busy = false
		return c.sqliteConn.QueryContext(ctx, query, args)
	}
	return &keptRows{sqliteRows: typed, k: k}, nil
}

// Close closes the kept statements, then the connection.
func (c *preparingConn) Close() error {
	var errs []error
	for _, k := range c.stmts {
		errs = append(errs, k.stmt.Close())
	}
	clear(c.stmts)
	return errors.Join(append(errs, c.sqliteConn.Close())...)
}

// sqliteRows is what a modernc connection's rows offer database/sql.
type sqliteRows interface {
	driver.Rows
	driver.RowsColumnTypeDatabaseTypeName
	driver.RowsColumnTypeLength
	driver.RowsColumnTypeNullable
	driver.RowsColumnTypePrecisionScale
	driver.RowsColumnTypeScanType
}

// keptRows are the rows of a kept statement, which is free again once they
// are closed.
type keptRows struct {
	sqliteRows
	k *keptStmt
}

func (r *keptRows) Close() error {
	err := r.sqliteRows.Close()
	r.k.busy = false
	return err
}
