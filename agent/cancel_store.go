package agent

import "context"

// RunCanceller is what a [Store] may offer to make an operator's cancel one
// statement. [Runtime.CancelRun] uses it when the Store has it: the guarded
// UPDATE that cancels also carries the authorisation and the check that
// the run has no MCP task, so that the common cancel — an operator
// stopping a run whose call is a plain request — reads nothing before it
// writes, and nothing after it. A cancel that this statement does not win
// is read once, to tell apart "no such run", "not yours", "finished" and
// "has a task" (which takes the path that reads the run's tasks).
type RunCanceller interface {
	// RunCancel moves run id to cancelled (reason cancelled, no error
	// text; the resumable state and the lease's deadline cleared, the
	// write fence and the lease owner kept, as RunFinish does) in one
	// guarded statement, if and only if the run is not terminal, by may
	// act on it (by.Admin, or by.ID is the run's owner and not empty), and
	// no MCP task was ever recorded for any of its calls. won reports
	// whether this call moved the row; anything else — a run that does
	// not exist, is not by's, is finished, or has a task — is false with
	// no error, and changes nothing.
	//
	// announce asks the store to tell the other processes on the database
	// of the cancel in the same statement, if it can (PostgreSQL: a
	// NOTIFY, which is delivered only if the statement commits, so never
	// for a cancel that lost); announced reports whether it did.
	RunCancel(ctx context.Context, id string, by Actor, announce bool) (won, announced bool, err error)
}
