package agent

import (
	"context"
	"errors"
	"fmt"
)

// Queue hands queued runs to a runtime's workers: a job engine such as
// River, whose jobs the store inserts in the same transaction as the runs
// they carry. Without one, [Runtime.Run] claims queued runs from the store
// itself.
//
// A Queue only says which run to look at. The run row stays the one
// definition of the run's state: a job handed out again — retried after an
// error, or rescued after its worker vanished — finds the run as the store
// has it, and [Runtime.Work] decides from the row, asking the write fence
// ([MayRetry]) before anything runs a second time.
type Queue interface {
	// Work calls work with the id of each run handed to this process, at
	// most limit at once, until ctx ends; it returns once every call has
	// returned. The context a call gets ends early if the engine cancels
	// the run's job (another process cancelled the run). An error from
	// work asks the engine to hand the run out again later.
	Work(ctx context.Context, limit int, work func(ctx context.Context, runID string) error) error
}

// Work executes the run a [Queue] handed out, as its row allows: a queued
// run is claimed (guarded, so of two workers one wins) and executed until
// it finishes, suspends, is cancelled, or ctx ends; a running run whose
// lease has lapsed — its worker died, and the engine handed its job out
// again — is reaped: dead-lettered if it was found mid non-idempotent
// write, else put back in the queue; any other run (finished, waiting for
// an operator, or held by a live worker) is left alone. It returns an
// error only when it could not read or claim the run, so that the engine
// tries again.
func (rt *Runtime) Work(ctx context.Context, runID string) error {
	// The claim first: it is guarded (only a queued run is claimed), and
	// a run handed out is nearly always queued, so reading the row before
	// it was a statement per run for nothing.
	// The run is watched from before the claim: the claim is guarded on
	// the run being queued, so it is the read of the row that Watch would
	// make, and a cancel after it finds the watch.
	owner := rt.newOwner("worker")
	watched, won, stop := rt.watcher.watchClaim(WithRunID(ctx, runID), runID)
	claimed, err := rt.cfg.Store.RunClaimID(ctx, runID, owner, rt.cfg.Now().Add(rt.cfg.LeaseDuration))
	if err != nil {
		stop()
		return fmt.Errorf("agent: claiming run %s: %w", runID, err)
	}
	if claimed != nil {
		won()
		rt.execute(ctx, claimed, owner, begun{claimed: true, watched: watched, stop: stop})
		return nil
	}
	stop()
	run, err := rt.cfg.Store.RunGet(ctx, runID)
	if errors.Is(err, ErrNotFound) {
		rt.logger.Warn("agent: the queue handed out a run that does not exist", "run", runID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("agent: reading run %s: %w", runID, err)
	}
	if now := rt.cfg.Now(); run.Status == StatusRunning && !run.LeaseExpires.IsZero() && run.LeaseExpires.Before(now) {
		rt.reap(ctx, run, now)
	}
	return nil
}

// workQueue is Run's loop when a Queue hands out the runs. A job the
// engine cancels is only a hint ([Watcher.Hint]): the watcher re-reads the
// run's row and cancels the run's calls if — and only if — the row says
// cancelled. The run's own context ends with ctx (the process is shutting
// down), which settles nothing.
func (rt *Runtime) workQueue(ctx context.Context) error {
	return rt.cfg.Queue.Work(ctx, rt.cfg.MaxConcurrentRuns, func(jobCtx context.Context, runID string) error {
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(jobCtx, func() {
			if ctx.Err() == nil {
				rt.watcher.Hint(runID)
			}
		})
		defer stop()
		return rt.Work(runCtx, runID)
	})
}
