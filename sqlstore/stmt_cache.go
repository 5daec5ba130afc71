package sqlstore

import (
	"context"
	"database/sql"
	"sync"
)

// stmtCache keeps the SQLite statements andon sends outside transactions
// prepared, per pool, so that SQLite parses each once rather than at every
// use: under a storm, parsing was the largest share of the process's CPU,
// and on the one writer connection it is time every other write waits.
// Only statements with arguments are prepared (the migrations, which have
// none, may hold several statements in one string); the store's statement
// builders make a bounded set of them, and past maxStmts the rest run
// unprepared.
type stmtCache struct {
	mu    sync.Mutex
	stmts map[*sql.DB]map[string]*sql.Stmt
	n     int
}

// maxStmts bounds the prepared statements of a store.
const maxStmts = 256

func newStmtCache() *stmtCache { return &stmtCache{stmts: map[*sql.DB]map[string]*sql.Stmt{}} }

// get returns stmt prepared on db, preparing it on first use, or nil: run
// it unprepared (no arguments, the cache is full, or it does not prepare —
// then running it reports why).
func (c *stmtCache) get(ctx context.Context, db *sql.DB, stmt string, nargs int) *sql.Stmt {
	if nargs == 0 {
		return nil
	}
	c.mu.Lock()
	ps := c.stmts[db][stmt]
	full := c.n >= maxStmts
	c.mu.Unlock()
	if ps != nil || full {
		return ps
	}
	ps, err := db.PrepareContext(ctx, stmt)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if other := c.stmts[db][stmt]; other != nil { // prepared meanwhile
		ps.Close()
		return other
	}
	if c.stmts[db] == nil {
		c.stmts[db] = map[string]*sql.Stmt{}
	}
	c.stmts[db][stmt] = ps
	c.n++
	return ps
}

// lookup returns stmt if it is prepared on db already, else nil; it never
// prepares (in a transaction, db's one connection is the transaction's).
func (c *stmtCache) lookup(db *sql.DB, stmt string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stmts[db][stmt]
}

// close closes every prepared statement.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.stmts {
		for _, ps := range m {
			ps.Close()
		}
	}
	clear(c.stmts)
}
