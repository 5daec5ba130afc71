package agent

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultWatchInterval is how often a Watcher's backstop poll reads the
// status of the runs it watches.
const DefaultWatchInterval = time.Second

// StatusReader is what a Watcher needs from the store: the status of many
// runs in one query.
type StatusReader interface {
	RunStatuses(ctx context.Context, ids []string) (map[string]Status, error)
}

// Watcher turns "this run is cancelled" into cancelled contexts. There is
// one per process. Every in-flight tool call registers its context under
// its run; when the run is cancelled, every context of that run is
// cancelled with cause ErrRunCancelled — at once when the cancel is
// announced in this process ([Watcher.Cancelled]), and otherwise by the
// backstop poll, which reads the status of every watched run in one query
// per interval, however many calls are in flight.
//
// The run row is the only definition of cancelled: the watcher asks the
// same question as the executor's step-boundary probe. It is fail-soft (a
// store error reads as "not cancelled", and is logged) and monotonic (a
// cancelled context stays cancelled).
type Watcher struct {
	store    StatusReader
	interval time.Duration
	logger   *slog.Logger

	mu      sync.Mutex
	watched map[string]map[*watch]struct{} // by run id

	pollReads, freshReads atomic.Uint64 // see StoreReads
}

type watch struct {
	cancel context.CancelCauseFunc
}

// NewWatcher returns a watcher that reads run statuses from store every
// interval (zero means DefaultWatchInterval). A nil logger discards.
func NewWatcher(store StatusReader, interval time.Duration, logger *slog.Logger) *Watcher {
	if interval <= 0 {
		interval = DefaultWatchInterval
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Watcher{
		store:    store,
		interval: interval,
		logger:   logger,
		watched:  make(map[string]map[*watch]struct{}),
	}
}

// Watch returns a context derived from ctx that is cancelled, with cause
// ErrRunCancelled, when run runID is cancelled. It reads the run's status
// first, fresh from the store, so a call about to send anything never goes
// out for a run that is already cancelled: the returned context is then
// already done. Call stop when the call is over.
func (w *Watcher) Watch(ctx context.Context, runID string) (_ context.Context, stop func()) {
	wctx, cancel := context.WithCancelCause(ctx)
	wt := &watch{cancel: cancel}
	w.mu.Lock()
	runs := w.watched[runID]
	if runs == nil {
		runs = make(map[*watch]struct{})
		w.watched[runID] = runs
	}
	runs[wt] = struct{}{}
	w.mu.Unlock()
	// Registered first, then read: a cancel that lands in between is seen
	// by one or the other.
	if w.isCancelled(ctx, runID) {
		cancel(ErrRunCancelled)
	}
	return wctx, func() {
		w.mu.Lock()
		delete(w.watched[runID], wt)
		if len(w.watched[runID]) == 0 {
			delete(w.watched, runID)
		}
		w.mu.Unlock()
		cancel(context.Canceled)
	}
}

// isCancelled reads one run's status. A store error is not a cancellation.
func (w *Watcher) isCancelled(ctx context.Context, runID string) bool {
	w.freshReads.Add(1)
	statuses, err := w.store.RunStatuses(context.WithoutCancel(ctx), []string{runID})
	if err != nil {
		w.logger.Warn("agent: reading run status failed; treating the run as not cancelled", "run", runID, "error", err)
		return false
	}
	return statuses[runID] == StatusCancelled
}

// Cancelled cancels every watched context of run runID. The runtime calls
// it when it cancels a run in this process; a notification from another
// process (PostgreSQL NOTIFY) calls it too. It trusts its caller: the
// store already says the run is cancelled.
func (w *Watcher) Cancelled(runID string) {
	w.mu.Lock()
	var cancels []context.CancelCauseFunc
	for wt := range w.watched[runID] {
		cancels = append(cancels, wt.cancel)
	}
	w.mu.Unlock()
	for _, cancel := range cancels {
		cancel(ErrRunCancelled)
	}
}

// Check re-reads the status of run runID now, and cancels its watched
// contexts if the store says it is cancelled: for a hint that is not
// itself the truth, such as a job engine cancelling the run's job.
func (w *Watcher) Check(ctx context.Context, runID string) {
	if w.isCancelled(ctx, runID) {
		w.Cancelled(runID)
	}
}

// Run polls until ctx ends: every interval, one query reads the status of
// every run with a call in flight, and the calls of cancelled runs are
// cancelled. With nothing in flight, it reads nothing.
func (w *Watcher) Run(ctx context.Context) { every(ctx, w.interval, w.poll) }

// Poll does one backstop poll now: for when notifications may have been
// missed, such as a listener that has just reconnected.
func (w *Watcher) Poll(ctx context.Context) { w.poll(ctx) }

func (w *Watcher) poll(ctx context.Context) {
	w.mu.Lock()
	ids := make([]string, 0, len(w.watched))
	for id := range w.watched {
		ids = append(ids, id)
	}
	w.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	w.pollReads.Add(1)
	statuses, err := w.store.RunStatuses(ctx, ids)
	if err != nil {
		if ctx.Err() == nil {
			w.logger.Warn("agent: polling run statuses failed; no run is treated as cancelled", "runs", len(ids), "error", err)
		}
		return
	}
	for id, status := range statuses {
		if status == StatusCancelled {
			w.Cancelled(id)
		}
	}
}

// StoreReads returns how many times the watcher has read run statuses from
// the store, failed reads included: polls, one query per interval however
// many runs are watched (none while nothing is), and fresh reads, one per
// [Watcher.Watch] and per [Watcher.Check].
func (w *Watcher) StoreReads() (polls, fresh uint64) {
	return w.pollReads.Load(), w.freshReads.Load()
}
