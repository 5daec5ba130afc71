package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/andonhq/andon/agent"
)

// The guarded transitions of agent.Store. Each is one statement whose WHERE
// clause is the guard: the row changes only if it is in the expected state
// (and, where an owner is given, still held by that owner), and the number
// of rows it changed says whether this caller won. Nothing is read first.
// A single write statement takes SQLite's write lock before it reads, so the
// guard and the change are atomic across connections and processes; on
// PostgreSQL, an UPDATE that waited for a concurrent transition evaluates
// its guard again on the row as that transition left it.
//
// Both count a row the WHERE clause matched as changed even when the new
// values equal the old, so a renewal to the same deadline still reports the
// lease held.

// terminal is the SQL list of terminal statuses (agent.Status.Terminal).
const terminal = `('completed', 'failed', 'cancelled')`

// held is the SQL list of the statuses in which a segment holds a run's
// lease: running, and waiting_for_input — a server's question to the
// operator, which the segment waits on with the tool call held open
// (agent.Ask), renewing its lease; a run whose segment died waiting is
// stale like any other.
const held = `('running', 'waiting_for_input')`

// heldOrHanded adds the queued runs that wait for their home to take them
// again (RunHandHome) to held: the reaper's statuses.
const heldOrHanded = `('running', 'waiting_for_input', 'queued')`

// Errors for arguments no transition can accept. They are programming
// errors, not lost races, so they are errors rather than false.
var (
	errNoOwner     = errors.New("empty lease owner")
	errNoLease     = errors.New("zero lease deadline")
	errNoState     = errors.New("no resumable state")
	errNotTerminal = errors.New("target status is not terminal")
	errNotWaiting  = errors.New("status is not a waiting status")
)

// RunClaim implements [agent.Store]. The oldest queued run (by creation
// time, then id) becomes running, held by owner until leaseUntil; its
// attempts go up by one and started_at is set on its first claim. On
// PostgreSQL the candidate is locked so that concurrent claimers neither
// wait for each other nor take the same run (see the dialect's claimLock).
func (s *Store) RunClaim(ctx context.Context, owner string, leaseUntil time.Time) (*agent.Run, error) {
	if err := checkLease(owner, leaseUntil); err != nil {
		return nil, fmt.Errorf("sqlstore: claiming a run: %w", err)
	}
	run, err := scanRun(s.d.queryRow(ctx, `UPDATE runs
		SET status = 'running', lease_owner = ?, lease_expires = ?, attempts = attempts + 1,
			started_at = CASE WHEN started_at = 0 THEN ? ELSE started_at END
		WHERE id = (SELECT runs.id FROM active_runs JOIN runs ON runs.id = active_runs.id
				WHERE active_runs.status = 'queued' AND runs.status = 'queued' AND runs.home = ''
				ORDER BY active_runs.created_at, active_runs.id LIMIT 1`+s.d.claimLock()+`)
			AND status = 'queued'
		RETURNING `+runColumns,
		owner, nanos(leaseUntil), time.Now().UnixNano()))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: claiming a run: %w", err)
	}
	return run, nil
}

// RunClaimID implements [agent.Store]: RunClaim for run id only.
func (s *Store) RunClaimID(ctx context.Context, id, owner string, leaseUntil time.Time) (*agent.Run, error) {
	if err := checkLease(owner, leaseUntil); err != nil {
		return nil, fmt.Errorf("sqlstore: claiming run %s: %w", id, err)
	}
	run, err := scanRun(s.d.queryRow(ctx, `UPDATE runs
		SET status = 'running', lease_owner = ?, lease_expires = ?, attempts = attempts + 1,
			started_at = CASE WHEN started_at = 0 THEN ? ELSE started_at END
		WHERE id = ? AND status = 'queued'
		RETURNING `+runColumns,
		owner, nanos(leaseUntil), time.Now().UnixNano(), id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: claiming run %s: %w", id, err)
	}
	return run, nil
}

// RunRenewLease implements [agent.Store].
func (s *Store) RunRenewLease(ctx context.Context, id, owner string, leaseUntil time.Time) (bool, error) {
	what := "renewing the lease of run " + id
	if err := checkLease(owner, leaseUntil); err != nil {
		return false, fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	return s.transition(ctx, what, `UPDATE runs SET lease_expires = ?
		WHERE id = ? AND status IN `+held+` AND lease_owner = ?`,
		nanos(leaseUntil), id, owner)
}

// RunSetPendingEffect implements [agent.Store]. The effect is stored as
// given; "" clears the fence.
func (s *Store) RunSetPendingEffect(ctx context.Context, id, owner string, effect agent.Effect, leaseUntil time.Time) (bool, error) {
	what := "setting the write fence of run " + id
	if err := checkLease(owner, leaseUntil); err != nil {
		return false, fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	return s.transition(ctx, what, `UPDATE runs SET pending_effect = ?, lease_expires = ?
		WHERE id = ? AND status = 'running' AND lease_owner = ?`,
		string(effect), nanos(leaseUntil), id, owner)
}

// RunSuspend implements [agent.Store]. to must be a waiting status and state
// must not be empty: a run suspended without resumable state could never be
// resumed. The write fence is left as it is.
func (s *Store) RunSuspend(ctx context.Context, id, owner string, to agent.Status, state []byte) (bool, error) {
	what := "suspending run " + id
	switch {
	case owner == "":
		return false, fmt.Errorf("sqlstore: %s: %w", what, errNoOwner)
	case !waiting(to):
		return false, fmt.Errorf("sqlstore: %s to %q: %w", what, to, errNotWaiting)
	case len(state) == 0:
		return false, fmt.Errorf("sqlstore: %s: %w", what, errNoState)
	}
	return s.transition(ctx, what, `UPDATE runs SET status = ?, suspended = ?, lease_owner = '', lease_expires = 0
		WHERE id = ? AND status = 'running' AND lease_owner = ?`,
		string(to), state, id, owner)
}

// RunResume implements [agent.Store]. It needs the run waiting in from with
// its resumable state present, and returns the run with that state, which
// stays in the row until the run finishes. A resume does not count as an
// attempt.
func (s *Store) RunResume(ctx context.Context, id string, from agent.Status, owner string, leaseUntil time.Time) (*agent.Run, error) {
	if err := checkLease(owner, leaseUntil); err != nil {
		return nil, fmt.Errorf("sqlstore: resuming run %s: %w", id, err)
	}
	if !waiting(from) {
		return nil, fmt.Errorf("sqlstore: resuming run %s from %q: %w", id, from, errNotWaiting)
	}
	run, err := scanRun(s.d.queryRow(ctx, `UPDATE runs
		SET status = 'running', lease_owner = ?, lease_expires = ?
		WHERE id = ? AND status = ? AND suspended IS NOT NULL
		RETURNING `+runColumns,
		owner, nanos(leaseUntil), id, string(from)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: resuming run %s: %w", id, err)
	}
	return run, nil
}

// RunFinish implements [agent.Store]. to must be terminal. It sets the
// reason, the error text and finished_at (now), clears the resumable state
// and the lease's deadline, and leaves the write fence, the request and the
// lease owner as they are (the owner may still record its step in flight:
// StepAppend).
func (s *Store) RunFinish(ctx context.Context, id, owner string, to agent.Status, reason agent.Reason, errText string) (bool, error) {
	what := "finishing run " + id
	if !to.Terminal() {
		return false, fmt.Errorf("sqlstore: %s as %q: %w", what, to, errNotTerminal)
	}
	if owner == "" {
		// An operator's cancel: concurrent ones share a statement
		// (finish_batch.go).
		key := finishKey{to: to, reason: reason, text: errText}
		if to == agent.StatusCancelled {
			key.trace = agent.TraceParent(ctx)
		}
		won, err := s.finishBatched(ctx, key, id)
		if err != nil {
			return false, fmt.Errorf("sqlstore: %s: %w", what, err)
		}
		return won, nil
	}
	return s.transition(ctx, what, `UPDATE runs SET status = ?, reason = ?, error = ?, finished_at = ?,
			suspended = NULL, lease_expires = 0
		WHERE id = ? AND status NOT IN `+terminal+` AND lease_owner = ?`,
		string(to), string(reason), errText, time.Now().UnixNano(), id, owner)
}

// RunRequeue implements [agent.Store]: running and held by owner → queued,
// lease released, fence cleared. As a last line of defence for the write
// fence it also refuses (false) a run whose fence reads a non-idempotent
// write in flight: clearing that stamp would lose the one fact that forbids
// a retry (agent.MayRetry), so such a run stays put for its caller to
// dead-letter.
func (s *Store) RunRequeue(ctx context.Context, id, owner string) (bool, error) {
	what := "requeueing run " + id
	if owner == "" {
		return false, fmt.Errorf("sqlstore: %s: %w", what, errNoOwner)
	}
	return s.requeue(ctx, what, id, `UPDATE runs SET status = 'queued', lease_owner = '', lease_expires = 0, pending_effect = ''
		WHERE id = ? AND status = 'running' AND lease_owner = ? AND pending_effect <> ? AND home = ''`,
		id, owner, string(agent.EffectNonIdempotentWrite))
}

// RunsStale implements [agent.Store]: running runs (and runs waiting for
// input, whose segment holds the lease) with a lease deadline
// (not 0) before now, the longest expired first. A running run without a
// lease deadline is never stale.
func (s *Store) RunsStale(ctx context.Context, now time.Time) ([]*agent.Run, error) {
	return s.queryRuns(ctx, "listing stale runs", `SELECT `+runColumns+` FROM runs
		WHERE id IN (SELECT id FROM active_runs WHERE status IN `+heldOrHanded+`)
			AND (status IN `+held+` OR status = 'queued' AND home <> '') AND lease_expires <> 0 AND lease_expires < ?
		ORDER BY lease_expires, id`, now.UnixNano())
}

// RunRequeueStale implements [agent.Store]. Like RunRequeue, it refuses a run
// whose fence reads a non-idempotent write in flight.
func (s *Store) RunRequeueStale(ctx context.Context, id string, now time.Time) (bool, error) {
	return s.requeue(ctx, "requeueing stale run "+id, id, `UPDATE runs
		SET status = 'queued', lease_owner = '', lease_expires = 0, pending_effect = ''
		WHERE id = ? AND status IN `+held+` AND lease_expires <> 0 AND lease_expires < ? AND pending_effect <> ? AND home = ''`,
		id, now.UnixNano(), string(agent.EffectNonIdempotentWrite))
}

// RunFinishStale implements [agent.Store]. finished_at is now, the reaper's
// clock. Like RunFinish it leaves the write fence as it is.
func (s *Store) RunFinishStale(ctx context.Context, id string, now time.Time, to agent.Status, reason agent.Reason, errText string) (bool, error) {
	what := "finishing stale run " + id
	if !to.Terminal() {
		return false, fmt.Errorf("sqlstore: %s as %q: %w", what, to, errNotTerminal)
	}
	return s.transition(ctx, what, `UPDATE runs SET status = ?, reason = ?, error = ?, finished_at = ?,
			suspended = NULL, lease_owner = '', lease_expires = 0
		WHERE id = ? AND (status IN `+held+` OR status = 'queued' AND home <> '') AND lease_expires <> 0 AND lease_expires < ?`,
		string(to), string(reason), errText, now.UnixNano(), id, now.UnixNano())
}

// RunHandHome implements [agent.Store]: a run with a home, resumed by
// owner for a decision, goes back to queued — without a job: no worker
// but its home takes it — with pickupBy as the deadline for its home to
// claim it (RunClaimID); the reaper finishes it if none does.
func (s *Store) RunHandHome(ctx context.Context, id, owner string, pickupBy time.Time) (bool, error) {
	what := "handing run " + id + " to its home"
	if err := checkLease(owner, pickupBy); err != nil {
		return false, fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	return s.transition(ctx, what, `UPDATE runs SET status = 'queued', lease_owner = '', lease_expires = ?
		WHERE id = ? AND status = 'running' AND lease_owner = ? AND home <> ''`,
		nanos(pickupBy), id, owner)
}

// transition runs one guarded UPDATE and reports whether it changed the row.
func (s *Store) transition(ctx context.Context, what, stmt string, args ...any) (bool, error) {
	won, err := changedOne(s.d.exec(ctx, stmt, args...))
	if err != nil {
		return false, fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	return won, nil
}

// requeue runs a guarded transition of run id back to queued and, if it
// won, inserts the run's new job in the same transaction.
func (s *Store) requeue(ctx context.Context, what, id, stmt string, args ...any) (bool, error) {
	won := false
	err := s.d.inTx(ctx, func(tx tx) error {
		var err error
		if won, err = changedOne(tx.exec(ctx, stmt, args...)); err != nil || !won {
			return err
		}
		return enqueueTx(ctx, tx, id)
	})
	if err != nil {
		return false, fmt.Errorf("sqlstore: %s: %w", what, err)
	}
	return won, nil
}

// checkLease refuses a claim that no guard could tell apart from "not held"
// (empty owner) or that the reaper could never see expire (zero deadline).
func checkLease(owner string, until time.Time) error {
	if owner == "" {
		return errNoOwner
	}
	if until.IsZero() {
		return errNoLease
	}
	return nil
}

func waiting(s agent.Status) bool {
	return s == agent.StatusWaitingForApproval || s == agent.StatusWaitingForInput
}
