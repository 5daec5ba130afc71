package agent

import (
	"context"
	"time"
)

// StepRecorder is a [Store] that records a step together with what the
// step boundary does next, in one statement where the backend can: the
// append's guard is the boundary's probe (it reads the run row, and a
// cancelled run still takes the step that was in flight), and the fence
// coming down, or the run's settlement, follows in the same transaction,
// only once the step is in. On PostgreSQL each of those was a statement
// and a commit of its own: a one-tool-call run paid a probe, an append
// and a fence clear after its call, and an append and a finish at its
// end.
type StepRecorder interface {
	// StepRecord appends step as [Store.StepAppend] does — the same guard,
	// seq and errors (ErrLeaseLost, ErrNotFound) — and reports whether
	// the row said cancelled when the step went in. Then, in the same
	// transaction and only on a run that is running (not cancelled) and
	// held by owner, it does what then asks. Whatever then asks, the step
	// is recorded or the error says why not.
	StepRecord(ctx context.Context, owner string, step *Step, then StepThen) (StepRecorded, error)
}

// StepThen is what [StepRecorder.StepRecord] does once the step is in. The
// zero value does nothing more.
type StepThen struct {
	// ClearFence clears the write fence and renews the lease to
	// LeaseUntil, as RunSetPendingEffect with "" does.
	ClearFence bool
	LeaseUntil time.Time
	// Finish, if set, settles the run as RunFinish with owner does, with
	// Reason and Error. It must be terminal and not cancelled (a cancel is
	// an operator's, never a segment's).
	Finish Status
	Reason Reason
	Error  string
}

// StepRecorded is what [StepRecorder.StepRecord] found.
type StepRecorded struct {
	// Cancelled: the row said cancelled as the step went in; nothing
	// followed it.
	Cancelled bool
	// Done: what StepThen asked for won. False if it asked for nothing,
	// or if the run was no longer running and held by owner.
	Done bool
}
