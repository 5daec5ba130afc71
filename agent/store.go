package agent

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is returned by a Store for a run that does not exist.
var ErrNotFound = errors.New("agent: run not found")

// Store keeps runs and their steps. It is the only definition of a run's
// state: every transition is one guarded statement that changes the row
// only if it is in the expected state (and, where an owner is given, still
// held by that owner), and reports whether it did. Implementations live in
// package sqlstore; they must be safe for concurrent use, also by several
// processes. An empty owner holds nothing: a guarded call with one never
// wins.
type Store interface {
	// RunInsert stores a new run (status queued, unless set).
	RunInsert(ctx context.Context, run *Run) error
	// RunGet reads a run, or returns ErrNotFound.
	RunGet(ctx context.Context, id string) (*Run, error)
	// RunList lists runs, newest first.
	RunList(ctx context.Context, filter RunFilter) ([]*Run, error)
	// RunStatuses reads the status of many runs in one query. Runs that do
	// not exist are absent from the map.
	RunStatuses(ctx context.Context, ids []string) (map[string]Status, error)

	// RunClaim moves the oldest queued run that no other claimer is taking
	// to running for owner, with a lease until leaseUntil, and returns it;
	// nil if there is none.
	RunClaim(ctx context.Context, owner string, leaseUntil time.Time) (*Run, error)
	// RunClaimID is RunClaim for one run: it moves run id, if it is
	// queued, to running for owner, and returns it; nil if it was not
	// queued (another worker took it, or it was cancelled). A [Queue]
	// that hands out run ids claims with it.
	RunClaimID(ctx context.Context, id, owner string, leaseUntil time.Time) (*Run, error)
	// RunRenewLease extends the lease of a running run owner holds (or one
	// waiting for input: its segment holds the call that asked).
	RunRenewLease(ctx context.Context, id, owner string, leaseUntil time.Time) (bool, error)
	// RunRenewLeases is RunRenewLease for many leases at once, in one
	// statement (or a few, for very many): it extends to leaseUntil the
	// lease of every run of leases that is running or waiting for input
	// and still held by the owner its Lease names, and returns the ids of
	// the runs it renewed. A run absent from them is no longer held by
	// that owner (it was cancelled, finished, suspended or taken over, or
	// it does not exist). A Lease with an empty owner holds nothing.
	RunRenewLeases(ctx context.Context, leases []Lease, leaseUntil time.Time) ([]string, error)
	// RunSetPendingEffect stamps (or, with "", clears) the write fence of a
	// running run owner holds, and renews its lease, in one statement.
	RunSetPendingEffect(ctx context.Context, id, owner string, effect Effect, leaseUntil time.Time) (bool, error)
	// RunSuspend moves a running run owner holds to a waiting status,
	// storing its resumable state and releasing the lease. A suspension
	// that arrives after a cancel changes nothing.
	RunSuspend(ctx context.Context, id, owner string, to Status, state []byte) (bool, error)
	// RunResume moves a run waiting in status from to running, for owner
	// with a lease until leaseUntil, and returns it (with its resumable
	// state); nil if the run was not waiting in from (someone else resumed
	// it, or it was cancelled).
	RunResume(ctx context.Context, id string, from Status, owner string, leaseUntil time.Time) (*Run, error)
	// RunFinish moves a run that is not terminal to a terminal status —
	// and, when owner is not empty, only if owner holds it. It clears the
	// resumable state and the lease's deadline, and leaves the write fence
	// as it is, and the lease owner: the segment that held the run when it
	// was cancelled may still record the step it had in flight
	// (StepAppend), and no other can. Cancelling a run is RunFinish with
	// StatusCancelled and no owner.
	RunFinish(ctx context.Context, id, owner string, to Status, reason Reason, errText string) (bool, error)
	// RunRequeue moves a running run owner holds back to queued, releasing
	// the lease and clearing the fence (the fence belongs to the attempt).
	// It refuses (false) a run whose fence reads non_idempotent_write:
	// clearing that stamp would lose the one record that forbids a retry.
	// Callers ask MayRetry first all the same.
	RunRequeue(ctx context.Context, id, owner string) (bool, error)
	// RunHandHome moves a running run that has a home ([Run].Home) and
	// that owner holds back to queued for its home alone to claim
	// (RunClaimID): no queue hands it to another worker. pickupBy is the
	// deadline by which its home must have claimed it; RunsStale then
	// lists it.
	RunHandHome(ctx context.Context, id, owner string, pickupBy time.Time) (bool, error)
	// RunsStale lists running runs (and runs waiting for input) whose
	// lease expired before now, and queued runs with a home whose pickup
	// deadline passed.
	RunsStale(ctx context.Context, now time.Time) ([]*Run, error)
	// RunRequeueStale is RunRequeue for a run whose lease expired before
	// now, whoever held it.
	RunRequeueStale(ctx context.Context, id string, now time.Time) (bool, error)
	// RunFinishStale is RunFinish for a run RunsStale lists, whoever held
	// it.
	RunFinishStale(ctx context.Context, id string, now time.Time, to Status, reason Reason, errText string) (bool, error)

	// StepAppend appends a step to its run for the segment owner, which
	// must hold the run — running, waiting for input (see [Ask]), or
	// cancelled while it held it (the step that was in flight) — and
	// assigns step.Seq. The guard and the append
	// are one statement. A segment that does not hold the run appends
	// nothing and gets ErrLeaseLost; a run that does not exist,
	// ErrNotFound.
	StepAppend(ctx context.Context, owner string, step *Step) error
	// StepList returns a run's steps in order.
	StepList(ctx context.Context, runID string) ([]*Step, error)

	// ApprovalRecord stores an operator's decision on one call of a
	// running run owner holds, in one statement guarded by the lease. It
	// reports false, storing nothing, if owner does not hold the run or
	// the call (run, step, call) has a decision already: a call is decided
	// once.
	ApprovalRecord(ctx context.Context, a *Approval, owner string) (bool, error)
	// ApprovalList returns a run's decisions, by step and call.
	ApprovalList(ctx context.Context, runID string) ([]*Approval, error)
}

// Lease names the claim of one segment on a run: the run, and the owner
// its lease names.
type Lease struct {
	RunID, Owner string
}

// RunFilter selects runs for RunList. The zero value selects the newest
// DefaultRunListLimit runs.
type RunFilter struct {
	Owner  string // only this owner's runs, if set
	Status Status // only runs in this status, if set
	Limit  int    // at most this many; 0 means DefaultRunListLimit
	Before string // only runs created before this run (for paging), if set
}

// DefaultRunListLimit is how many runs RunList returns by default.
const DefaultRunListLimit = 100
