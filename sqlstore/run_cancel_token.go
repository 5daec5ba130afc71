package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/token"
)

// An operator's cancel through the API, authenticated in the statement that
// cancels. The API reads the request's token (TokenByHash) and then cancels
// (RunCancel): two trips to the database before the NOTIFY leaves, and
// across machines each is a network round trip. On PostgreSQL,
// RunCancelByToken is both in one statement: it reads the token row and
// returns it, and the cancel's guard re-checks that same row — it exists,
// is not revoked, has a role that may cancel, and names the run's owner
// unless it is an admin's — so that no token the API would refuse can
// cancel anything, and the API still decides from the row it gets back
// exactly as before. There is no cache: a revocation holds from the next
// statement. SQLite keeps the two statements: they are in process, no trip.

// TokenCanceller cancels a run and authenticates its API token in one
// round trip. [Store.TokenCanceller] offers one where the database can.
type TokenCanceller interface {
	// RunCancelByToken cancels run id as RunCancel does for the actor of
	// the token whose hash is hash, if and only if that token exists, is
	// not revoked, has a role at least least, and is an admin's or names
	// the run's owner. t is the token row, read in the same statement,
	// revoked or not; token.ErrNotFound if there is none. won and
	// announced are as RunCancel's.
	RunCancelByToken(ctx context.Context, hash []byte, id string, least token.Role, announce bool) (t *token.Token, won, announced bool, err error)
}

var _ TokenCanceller = (*Store)(nil)

// TokenCanceller returns the store as a [TokenCanceller] and true if its
// database makes the token's check and the cancel one statement
// (PostgreSQL), or false (SQLite).
func (s *Store) TokenCanceller() (TokenCanceller, bool) {
	if _, ok := s.d.(tokenCancelling); !ok {
		return nil, false
	}
	return s, true
}

// tokenCancelling is a dialect that can read a token and cancel in one
// statement.
type tokenCancelling interface {
	// cancellingByToken wraps update, finishMany's guarded UPDATE of runs
	// without RETURNING, in a statement that first reads the token whose
	// hash is its first argument, adds to update's guard that the token
	// may cancel each run (see tokenMayCancel), and returns one row if
	// the token exists: its columns (tokenColumns) and the ids cancelled,
	// announced if notify.
	cancellingByToken(update string, notify bool) string
}

// tokenGuard is who may cancel in a cancel by token: the token whose hash
// (as a string, to be a key) this is, if its role is at least least.
type tokenGuard struct {
	hash  string
	least token.Role
}

// tokenMayCancel is the condition, on the row of runs being updated, that
// the token read as tok may cancel it; its arguments are the roles at
// least the guard's least and the admin role.
const tokenMayCancel = `EXISTS (SELECT 1 FROM tok WHERE tok.revoked_at = 0 AND tok.role = ANY(?)
			AND (tok.role = ? OR tok.name = runs.owner))`

// RunCancelByToken implements [TokenCanceller]. Concurrent cancels with
// one token share a statement (finish_batch.go), as RunCancel's of one
// actor do.
func (s *Store) RunCancelByToken(ctx context.Context, hash []byte, id string, least token.Role, announce bool) (*token.Token, bool, bool, error) {
	if _, ok := s.d.(tokenCancelling); !ok {
		return nil, false, false, errors.New("sqlstore: this database cannot cancel by token in one statement (see Store.TokenCanceller)")
	}
	if len(hash) == 0 {
		return nil, false, false, token.ErrNotFound
	}
	key := finishKey{to: agent.StatusCancelled, reason: agent.ReasonCancelled, cancel: true,
		notify: announce && s.d.canAnnounce(), byToken: tokenGuard{hash: string(hash), least: least},
		trace: agent.TraceParent(ctx)}
	req := s.finishWait(ctx, key, id)
	if req.err != nil {
		return nil, false, false, fmt.Errorf("sqlstore: cancelling run %s by token: %w", id, req.err)
	}
	if req.tok == nil {
		return nil, false, false, token.ErrNotFound
	}
	return req.tok, req.won, req.won && key.notify, nil
}

// cancelManyByToken runs the statement of a batch of cancels by one token:
// update (finishUpdate's, with args) wrapped by the dialect.
func (s *Store) cancelManyByToken(ctx context.Context, key finishKey, update string, args []any) (map[string]bool, *token.Token, error) {
	d, ok := s.d.(tokenCancelling)
	if !ok {
		return nil, nil, errors.New("sqlstore: this database cannot cancel by token in one statement")
	}
	stmt := d.cancellingByToken(update+` AND `+tokenMayCancel, key.notify)
	all := make([]any, 0, len(args)+3)
	all = append(all, []byte(key.byToken.hash))
	all = append(all, args...)
	all = append(all, rolesAtLeast(key.byToken.least), string(token.RoleAdmin))
	var won []string
	t, err := scanToken(extraScan{s.d.oneTrip().queryRow(ctx, stmt, all...), []any{&won}})
	if errors.Is(err, sql.ErrNoRows) {
		return map[string]bool{}, nil, nil // no such token: nothing could be cancelled
	}
	if err != nil {
		return nil, nil, fmt.Errorf("sqlstore: cancelling by token: %w", err)
	}
	return idSet(won), t, nil
}

// rolesAtLeast lists the roles at least least, as the role column holds
// them.
func rolesAtLeast(least token.Role) []string {
	var out []string
	for _, r := range []token.Role{token.RoleViewer, token.RoleOperator, token.RoleAdmin} {
		if r.AtLeast(least) {
			out = append(out, string(r))
		}
	}
	return out
}

// extraScan scans a row into the destinations given, then into extra: for
// a row that is a token's columns and more.
type extraScan struct {
	scanner
	extra []any
}

func (e extraScan) Scan(dest ...any) error { return e.scanner.Scan(append(dest, e.extra...)...) }

// cancellingByToken implements tokenCancelling: the token is a CTE that the
// UPDATE's guard and the result both read, so both see one row; the
// UPDATE, a data-modifying CTE, runs to its end whatever the result reads,
// and its ids are announced as in announcing (delivered at commit only).
func (d *postgres) cancellingByToken(update string, notify bool) string {
	won := `SELECT done.id FROM done`
	if notify {
		won = announced("done")
	}
	return `WITH tok AS (SELECT ` + tokenColumns + ` FROM api_tokens WHERE hash = ?),
		done AS (` + update + ` RETURNING runs.id),
		won AS (` + won + `)
		SELECT tok.id, tok.name, tok.role, tok.hash, tok.created_at, tok.last_used_at, tok.revoked_at,
			ARRAY(SELECT id FROM won) FROM tok`
}
