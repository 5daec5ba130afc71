package agent

import "errors"

var (
	// ErrRunCancelled is the cause with which the context of a cancelled
	// run's calls is cancelled: context.Cause(ctx) tells a cancelled run
	// from a timeout or a shutdown.
	ErrRunCancelled = errors.New("agent: run cancelled")

	// ErrRunDeadline is the cause with which a run's context ends when
	// its MaxRunTime passes: a failure of the run, not a cancellation.
	ErrRunDeadline = errors.New("agent: run deadline passed")

	// ErrForbidden reports an actor who may not do what they asked, such
	// as cancelling another owner's run without being an admin.
	ErrForbidden = errors.New("agent: forbidden")

	// ErrFinished reports a run that is already terminal: it cannot be
	// cancelled, approved or resumed.
	ErrFinished = errors.New("agent: run already finished")

	// ErrNotWaiting reports an approval or denial for a run that is not
	// waiting for one (or that another operator already decided).
	ErrNotWaiting = errors.New("agent: run is not waiting for approval")

	// ErrLeaseLost reports a write by a segment that no longer holds its
	// run: another segment, or the reaper, has it now. The write did not
	// happen, and the segment stops without writing anything else.
	ErrLeaseLost = errors.New("agent: lease lost")
)

// errStop ends a segment without settling the run: the run was cancelled
// (the row says so already) or the segment lost its lease (another
// segment, or the reaper, owns the run now).
type errStop struct{ why string }

func (e *errStop) Error() string { return "agent: segment stopped: " + e.why }

var (
	stopCancelled = &errStop{"run cancelled"}
	stopLeaseLost = &errStop{"lease lost"}
	stopSuspended = &errStop{"waiting for approval"}
	// stopShutdown: the process is stopping. The run keeps its lease
	// until it lapses and its fence as it is, so the reaper of a later
	// process decides, by the fence, whether it may be retried.
	stopShutdown = &errStop{"shutting down"}
)
