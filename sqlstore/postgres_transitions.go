package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/jackc/pgx/v5"
)

// The guarded transitions of agent.Store on PostgreSQL, the same statements
// as on SQLite (transitions.go). Each is one UPDATE whose WHERE clause is
// the guard, and nothing is read first. Under READ COMMITTED, an UPDATE
// that finds its row locked by a concurrent transition waits for it, then
// evaluates the guard again on the row as that transition left it
// (PostgreSQL's re-check of an updated row): of two cancels, the second
// sees status cancelled and changes nothing.
//
// PostgreSQL, like SQLite, counts a row the WHERE clause matched as updated
// even when the new values equal the old, so a renewal to the same deadline
// still reports the lease held.

// RunClaim implements [agent.Store] as [Store.RunClaim] does. The oldest
// queued run that no concurrent claim has locked is taken: the candidate
// is selected FOR NO KEY UPDATE SKIP LOCKED, so concurrent claimers never
// wait for each other and never take the same run. (NO KEY: the lock
// the UPDATE takes anyway, which a step append's foreign-key check does not
// conflict with.) The claim can therefore pass over a queued run that
// another transaction holds for the instant of its own statement.
func (s *PGStore) RunClaim(ctx context.Context, owner string, leaseUntil time.Time) (*agent.Run, error) {
	if err := checkLease(owner, leaseUntil); err != nil {
		return nil, fmt.Errorf("sqlstore: claiming a run: %w", err)
	}
	run, err := scanRun(s.pool.QueryRow(ctx, `UPDATE runs
		SET status = 'running', lease_owner = $1, lease_expires = $2, attempts = attempts + 1,
			started_at = CASE WHEN started_at = 0 THEN $3 ELSE started_at END
		WHERE id = (SELECT id FROM runs WHERE status = 'queued' ORDER BY created_at, id LIMIT 1
				FOR NO KEY UPDATE SKIP LOCKED)
			AND status = 'queued'
		RETURNING `+runColumns,
		owner, nanos(leaseUntil), time.Now().UnixNano()))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: claiming a run: %w", err)
	}
	return run, nil
}

// RunClaimID implements [agent.Store]: RunClaim for run id only.
func (s *PGStore) RunClaimID(ctx context.Context, id, owner string, leaseUntil time.Time) (*agent.Run, error) {
	if err := checkLease(owner, leaseUntil); err != nil {
		return nil, fmt.Errorf("sqlstore: claiming run %s: %w", id, err)
	}
	run, err := scanRun(s.pool.QueryRow(ctx, `UPDATE runs
		SET status = 'running', lease_owner = $1, lease_expires = $2, attempts = attempts + 1,
			started_at = CASE WHEN started_at = 0 THEN $3 ELSE started_at END
		WHERE id = $4 AND status = 'queued'
		RETURNING `+runColumns,
		owner, nanos(leaseUntil), time.Now().UnixNano(), id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: claiming run %s: %w", id, err)
	}
	return run, nil
}

// RunRenewLease implements [agent.Store].
func (s *PGStore) RunRenewLease(ctx context.Context, id, owner string, leaseUntil time.Time) (bool, error) {
	what := "renewing the lease of run " + id
	if err := checkLease(owner, leaseUntil); err != nil {
		return false, fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	return s.transition(ctx, what, `UPDATE runs SET lease_expires = $1
		WHERE id = $2 AND status = 'running' AND lease_owner = $3`,
		nanos(leaseUntil), id, owner)
}

// RunSetPendingEffect implements [agent.Store] as
// [Store.RunSetPendingEffect] does.
func (s *PGStore) RunSetPendingEffect(ctx context.Context, id, owner string, effect agent.Effect, leaseUntil time.Time) (bool, error) {
	what := "setting the write fence of run " + id
	if err := checkLease(owner, leaseUntil); err != nil {
		return false, fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	return s.transition(ctx, what, `UPDATE runs SET pending_effect = $1, lease_expires = $2
		WHERE id = $3 AND status = 'running' AND lease_owner = $4`,
		string(effect), nanos(leaseUntil), id, owner)
}

// RunSuspend implements [agent.Store] as [Store.RunSuspend] does.
func (s *PGStore) RunSuspend(ctx context.Context, id, owner string, to agent.Status, state []byte) (bool, error) {
	what := "suspending run " + id
	switch {
	case owner == "":
		return false, fmt.Errorf("sqlstore: %s: %w", what, errNoOwner)
	case !waiting(to):
		return false, fmt.Errorf("sqlstore: %s to %q: %w", what, to, errNotWaiting)
	case len(state) == 0:
		return false, fmt.Errorf("sqlstore: %s: %w", what, errNoState)
	}
	return s.transition(ctx, what, `UPDATE runs SET status = $1, suspended = $2, lease_owner = '', lease_expires = 0
		WHERE id = $3 AND status = 'running' AND lease_owner = $4`,
		string(to), state, id, owner)
}

// RunResume implements [agent.Store] as [Store.RunResume] does.
func (s *PGStore) RunResume(ctx context.Context, id string, from agent.Status, owner string, leaseUntil time.Time) (*agent.Run, error) {
	if err := checkLease(owner, leaseUntil); err != nil {
		return nil, fmt.Errorf("sqlstore: resuming run %s: %w", id, err)
	}
	if !waiting(from) {
		return nil, fmt.Errorf("sqlstore: resuming run %s from %q: %w", id, from, errNotWaiting)
	}
	run, err := scanRun(s.pool.QueryRow(ctx, `UPDATE runs
		SET status = 'running', lease_owner = $1, lease_expires = $2
		WHERE id = $3 AND status = $4 AND suspended IS NOT NULL
		RETURNING `+runColumns,
		owner, nanos(leaseUntil), id, string(from)))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: resuming run %s: %w", id, err)
	}
	return run, nil
}

// RunFinish implements [agent.Store] as [Store.RunFinish] does.
func (s *PGStore) RunFinish(ctx context.Context, id, owner string, to agent.Status, reason agent.Reason, errText string) (bool, error) {
	what := "finishing run " + id
	if !to.Terminal() {
		return false, fmt.Errorf("sqlstore: %s as %q: %w", what, to, errNotTerminal)
	}
	stmt := `UPDATE runs SET status = $1, reason = $2, error = $3, finished_at = $4,
			suspended = NULL, lease_expires = 0
		WHERE id = $5 AND status NOT IN ` + terminal
	args := []any{string(to), string(reason), errText, time.Now().UnixNano(), id}
	if owner != "" {
		stmt += ` AND lease_owner = $6`
		args = append(args, owner)
	}
	return s.transition(ctx, what, stmt, args...)
}

// RunRequeue implements [agent.Store] as [Store.RunRequeue] does, refusing
// a run whose fence reads a non-idempotent write in flight.
func (s *PGStore) RunRequeue(ctx context.Context, id, owner string) (bool, error) {
	what := "requeueing run " + id
	if owner == "" {
		return false, fmt.Errorf("sqlstore: %s: %w", what, errNoOwner)
	}
	return s.requeue(ctx, what, id, `UPDATE runs SET status = 'queued', lease_owner = '', lease_expires = 0, pending_effect = ''
		WHERE id = $1 AND status = 'running' AND lease_owner = $2 AND pending_effect <> $3`,
		id, owner, string(agent.EffectNonIdempotentWrite))
}

// RunsStale implements [agent.Store]: running runs with a lease deadline
// (not 0) before now, the longest expired first.
func (s *PGStore) RunsStale(ctx context.Context, now time.Time) ([]*agent.Run, error) {
	return s.queryRuns(ctx, "listing stale runs", `SELECT `+runColumns+` FROM runs
		WHERE status = 'running' AND lease_expires <> 0 AND lease_expires < $1
		ORDER BY lease_expires, id`, now.UnixNano())
}

// RunRequeueStale implements [agent.Store]. Like RunRequeue, it refuses a run
// whose fence reads a non-idempotent write in flight.
func (s *PGStore) RunRequeueStale(ctx context.Context, id string, now time.Time) (bool, error) {
	return s.requeue(ctx, "requeueing stale run "+id, id, `UPDATE runs
		SET status = 'queued', lease_owner = '', lease_expires = 0, pending_effect = ''
		WHERE id = $1 AND status = 'running' AND lease_expires <> 0 AND lease_expires < $2 AND pending_effect <> $3`,
		id, now.UnixNano(), string(agent.EffectNonIdempotentWrite))
}

// RunFinishStale implements [agent.Store]. finished_at is now, the reaper's
// clock. Like RunFinish it leaves the write fence as it is.
func (s *PGStore) RunFinishStale(ctx context.Context, id string, now time.Time, to agent.Status, reason agent.Reason, errText string) (bool, error) {
	what := "finishing stale run " + id
	if !to.Terminal() {
		return false, fmt.Errorf("sqlstore: %s as %q: %w", what, to, errNotTerminal)
	}
	return s.transition(ctx, what, `UPDATE runs SET status = $1, reason = $2, error = $3, finished_at = $4,
			suspended = NULL, lease_owner = '', lease_expires = 0
		WHERE id = $5 AND status = 'running' AND lease_expires <> 0 AND lease_expires < $4`,
		string(to), string(reason), errText, now.UnixNano(), id)
}

// transition runs one guarded UPDATE and reports whether it changed the row.
func (s *PGStore) transition(ctx context.Context, what, stmt string, args ...any) (bool, error) {
	tag, err := s.pool.Exec(ctx, stmt, args...)
	if err != nil {
		return false, fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	return tag.RowsAffected() == 1, nil
}

// requeue runs a guarded transition of run id back to queued and, if it
// won, inserts the run's new job in the same transaction.
func (s *PGStore) requeue(ctx context.Context, what, id, stmt string, args ...any) (bool, error) {
	won := false
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, stmt, args...)
		if won = err == nil && tag.RowsAffected() == 1; !won {
			return err
		}
		return s.enqueueTx(ctx, tx, id)
	})
	if err != nil {
		return false, fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	return won, nil
}
