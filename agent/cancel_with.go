package agent

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// StoreCancel is a cancel of one run that a caller makes in its store, in a
// statement that also authorises it by means the runtime does not know: the
// API's token, read and re-checked in the statement that cancels. announce
// is as for [RunCanceller.RunCancel]. by is who the cancel acted as; won
// and announced are as RunCancel's: won only if the run row moved to
// cancelled, and the run had no MCP task.
type StoreCancel func(ctx context.Context, announce bool) (by Actor, won, announced bool, err error)

// CancelRunWith cancels run runID with cancel instead of the runtime's own
// statement, for a caller that authenticates in the same round trip as it
// cancels. If cancel won, what follows is what follows a cancel by
// CancelRun — this process's calls of the run are cancelled, and OnCancel
// is told — and CancelRunWith returns true. Otherwise nothing changed, and
// it returns false: the caller then goes the ordinary way (authorise, then
// CancelRun), which says why or, for a run with tasks, cancels them.
func (rt *Runtime) CancelRunWith(ctx context.Context, runID string, cancel StoreCancel) (_ bool, err error) {
	ctx, span := rt.startCancelSpan(ctx, runID)
	defer func() { endCancelSpan(span, err) }()
	return rt.cancelRunWith(ctx, runID, span, cancel)
}

// cancelRunWith is CancelRunWith, recorded on span (nil when not tracing).
func (rt *Runtime) cancelRunWith(ctx context.Context, runID string, span trace.Span, cancel StoreCancel) (bool, error) {
	start := time.Now()
	// Counted from before the row is written until this process's calls
	// of the run are cancelled (and counted themselves): the cancelled
	// runs' bookkeeping waits for it (signals.go).
	end := rt.watcher.beginCancel()
	defer end()
	by, won, announced, err := cancel(ctx, rt.announces(runID))
	if err != nil {
		return false, fmt.Errorf("agent: cancelling run %s: %w", runID, err)
	}
	rowWritten(span, by, won, start)
	if won {
		rt.cancelled(ctx, by, runID, announced)
	}
	return won, nil
}
