package agent

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
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
// cancelled with cause ErrRunCancelled — at once when the run is cancelled
// by this process's runtime, soon after a hint from outside the process
// ([Watcher.Hint]), and otherwise by the backstop poll, which reads the
// status of every watched run in one query per interval, however many calls
// are in flight.
//
// The run row is the only definition of cancelled: the watcher asks the
// same question as the executor's step-boundary probe, and a context is
// cancelled only after a read of the row said cancelled (or, in this
// process, the guarded update that made it so won). It is fail-soft (a
// store error reads as "not cancelled", and is logged) and monotonic: once
// it has seen a run cancelled, every call of that run it watches is
// cancelled — those in flight and those that start while any is — whatever
// a later read says or fails to say.
type Watcher struct {
	store    StatusReader
	interval time.Duration
	logger   *slog.Logger

	mu      sync.Mutex
	watched map[string]*watchedRun // by run id
	hinted  map[string]struct{}    // watched runs hinted since the last read of them
	// hinting: hints are pending or being read, counted once in signals
	// as a cancel under way (see Hint).
	hinting bool
	readers int           // reads of hinted runs under way: at most hintedReaders
	hint    chan struct{} // wakes Run to read the hinted runs; holds one wake-up
	signals signals       // cancels under way, calls not yet returned: signals.go

	signalWait time.Duration // see defaultSignalWait

	pollReads, freshReads atomic.Uint64 // see StoreReads
}

// watchedRun is a run with calls watched in this process.
type watchedRun struct {
	calls map[*watch]struct{}
	// claiming counts the calls watched before a claim that has not won
	// yet ([Watcher.watchClaim]): the run may be executing elsewhere.
	claiming int
	// cancelled: a read of the row said cancelled (or this process's
	// guarded cancel won). Cancelled is terminal, so it is never unset; it
	// is forgotten with the run once no call of it is watched.
	cancelled bool
}

type watch struct {
	cancel context.CancelCauseFunc
	// call: a tool call's watch (watchCall), not a whole segment's. A
	// cancel counts it in signals until it stops (signals.go); counted
	// says it is.
	call, counted bool
	// span is the recording span of the watched context, if any: a
	// cancel's signal is an event on it (trace.go).
	span trace.Span
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
		watched:  make(map[string]*watchedRun),
		hinted:   make(map[string]struct{}),
		hint:     make(chan struct{}, 1),

		signalWait: defaultSignalWait,
	}
}

// Watch returns a context derived from ctx that is cancelled, with cause
// ErrRunCancelled, when run runID is cancelled. It reads the run's status
// first, fresh from the store, so a call about to send anything never goes
// out for a run that is already cancelled: the returned context is then
// already done. (A run the watcher already knows is cancelled needs no
// read.) Call stop when the call is over.
func (w *Watcher) Watch(ctx context.Context, runID string) (_ context.Context, stop func()) {
	return w.watch(ctx, runID, false)
}

// watchCall is Watch for one tool call: once a cancel has stopped it, the
// cancelled runs' bookkeeping waits until it stops (signals.go), so its
// stop is called as soon as the call has returned. stop may be called more
// than once.
func (w *Watcher) watchCall(ctx context.Context, runID string) (_ context.Context, stop func()) {
	return w.watch(ctx, runID, true)
}

func (w *Watcher) watch(ctx context.Context, runID string, call bool) (_ context.Context, stop func()) {
	wctx, known, stop := w.register(ctx, runID, false, call)
	// Registered first, then read: a cancel that lands in between is seen
	// by one or the other.
	if known || w.isCancelled(ctx, runID) {
		w.cancel(runID)
	}
	return wctx, stop
}

// watchGuarded is watchCall without its read, for a tool call whose next
// statement is a write guarded on the run not being cancelled (the
// fence): that statement reads the row after the registration, as
// watchCall's read would, so a cancel is seen by the one or the other — by
// the guard, which then loses, or by the watch. A run the watcher knows is
// cancelled comes back cancelled at once, as from Watch.
func (w *Watcher) watchGuarded(ctx context.Context, runID string) (_ context.Context, stop func()) {
	wctx, known, stop := w.register(ctx, runID, false, true)
	if known {
		w.cancel(runID)
	}
	return wctx, stop
}

// watchSpan is a watch without its read, for a context that a watch
// already covers, so that a cancel's signal reaches the span it carries.
func (w *Watcher) watchSpan(ctx context.Context, runID string) (_ context.Context, stop func()) {
	wctx, known, stop := w.register(ctx, runID, false, false)
	if known {
		w.cancel(runID)
	}
	return wctx, stop
}

// watchClaim is a watch without its read, for a claim (guarded on the run
// being queued, it reads the row after the registration, as watchGuarded's
// fence does): until claimed is called (the claim won), the watch does not
// count for [Watcher.Watches], since the run may be executing in another
// process, which a cancel must then be announced to.
func (w *Watcher) watchClaim(ctx context.Context, runID string) (_ context.Context, claimed, stop func()) {
	wctx, known, unwatch := w.register(ctx, runID, true, false)
	if known {
		w.cancel(runID)
	}
	var once sync.Once
	claimed = func() {
		once.Do(func() {
			w.mu.Lock()
			if run := w.watched[runID]; run != nil {
				run.claiming--
			}
			w.mu.Unlock()
		})
	}
	return wctx, claimed, func() {
		claimed() // a watch that ends counts no more, claimed or not
		unwatch()
	}
}

// register adds a watch of run runID, claiming (see watchClaim) or not, of
// a tool call (see watchCall) or not, and reports whether the run is known
// to be cancelled.
func (w *Watcher) register(ctx context.Context, runID string, claiming, call bool) (_ context.Context, known bool, stop func()) {
	wctx, cancel := context.WithCancelCause(ctx)
	wt := &watch{cancel: cancel, call: call}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		wt.span = span
	}
	w.mu.Lock()
	run := w.watched[runID]
	if run == nil {
		run = &watchedRun{calls: make(map[*watch]struct{})}
		w.watched[runID] = run
	}
	run.calls[wt] = struct{}{}
	if claiming {
		run.claiming++
	}
	known = run.cancelled
	w.mu.Unlock()
	return wctx, known, func() {
		w.mu.Lock()
		delete(run.calls, wt)
		if wt.counted {
			wt.counted = false
			w.signals.lower()
		}
		if len(run.calls) == 0 && w.watched[runID] == run { // not a later one's
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

// cancel cancels every watched context of run runID. Its callers know the
// row says cancelled: a read of it did, or — in [Runtime.Cancel] — the
// guarded update that moved it to cancelled has just won, and cancelled is
// terminal, so the row says so for good.
func (w *Watcher) cancel(runID string) {
	w.cancelFrom(runID, trace.SpanContext{}, "row read")
}

// cancelFrom is cancel, for a cancel whose span is from (invalid if none,
// or if it was made in another process) and that reached the watcher by
// source: it adds the signal event to the watched contexts' spans, linked
// to from, and returns those spans.
func (w *Watcher) cancelFrom(runID string, from trace.SpanContext, source string) []signalled {
	w.mu.Lock()
	var cancels []context.CancelCauseFunc
	var spans []signalled
	if run := w.watched[runID]; run != nil {
		run.cancelled = true
		for wt := range run.calls {
			cancels = append(cancels, wt.cancel)
			if wt.span != nil {
				spans = append(spans, signalled{wt.span, wt.call})
			}
			if wt.call && !wt.counted {
				wt.counted = true
				w.signals.raise()
			}
		}
	}
	w.mu.Unlock()
	at := time.Now()
	for _, cancel := range cancels {
		cancel(ErrRunCancelled)
	}
	if spans != nil {
		signalSpans(spans, from, source, at)
	}
	return spans
}

// Watches reports whether a call of run runID is watched here now: the
// run is executing in this process.
func (w *Watcher) Watches(runID string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	run := w.watched[runID]
	return run != nil && len(run.calls) > run.claiming
}

// Hint tells the watcher that the runs runIDs may have been cancelled elsewhere:
// a notification from another process (PostgreSQL NOTIFY), a job engine
// cancelling the run's job. A hint is not the truth. It makes [Watcher.Run]
// read the row now, and only a row that says cancelled cancels anything; a
// hint the row does not back changes nothing (it is logged at debug).
// A hint that arrives while a read is under way is read at once by a
// second (see hintedReaders); those that arrive while both are under way
// are read together in the next, one query for all of them, so a storm of
// hints costs a few reads, not one each. A hint for a run with no call in flight here is dropped:
// a call that starts later reads the row itself ([Watcher.Watch]). Hint
// never blocks; the hints wait for Run to read them.
//
// From a hint until the read of it has returned, a cancel counts as under
// way here (signals.go): the hint is how a cancel made in another process
// arrives, and the bookkeeping of the runs an earlier hint cancelled —
// their boundary reads, last steps, job completions — would otherwise
// take the pool's connections and the CPU that this read needs (measured,
// PostgreSQL, serve and two workers, waves of 100: a hinted read waited
// 23 ms for a connection, the pool at 15 of 16, behind the bookkeeping of
// the runs the previous read had cancelled). A hint the row does not back
// holds that bookkeeping up by one read, at most signalWait.
//
// Hints given together (the runs of one notification) are read together.
func (w *Watcher) Hint(runIDs ...string) {
	var unwatched []string
	read := false
	w.mu.Lock()
	for _, id := range runIDs {
		if run := w.watched[id]; run == nil || run.cancelled {
			unwatched = append(unwatched, id)
			continue
		}
		w.hinted[id] = struct{}{}
		read = true
	}
	if read && !w.hinting {
		w.hinting = true
		w.signals.raise()
	}
	w.mu.Unlock()
	for _, id := range unwatched {
		w.logger.Debug("agent: a cancel hint for a run with no live call here; nothing to read", "run", id)
	}
	if !read {
		return
	}
	select {
	case w.hint <- struct{}{}:
	default: // a wake-up is pending already; it reads this run too
	}
}

// Run polls until ctx ends: every interval, one query reads the status of
// every run with a call in flight (and not yet known to be cancelled), and
// the calls of cancelled runs are cancelled. With nothing in flight, it
// reads nothing. Between polls, it reads the runs hinted at
// ([Watcher.Hint]) as soon as hints arrive.
func (w *Watcher) Run(ctx context.Context) {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	var readers sync.WaitGroup
	defer readers.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.poll(ctx)
		case <-w.hint:
			if w.startReader() {
				readers.Go(func() { w.readHinted(ctx) })
			}
		}
	}
}

// hintedReaders bounds the reads of hinted runs under way at once. With one,
// the hints that arrived while a read was under way waited for it to
// return before theirs began (measured, PostgreSQL, serve and two workers,
// waves of 100: the wave's notifications reached a worker over 2–7 ms, and
// a batch of 30 waited 22 ms behind a read of 25); with two, they are read
// at once, and the hints that arrive while both are under way are read
// together by whichever returns first: still a few reads per storm.
const hintedReaders = 2

// startReader reports whether a reader of the hinted runs is to start: there
// are hints to read and fewer than hintedReaders readers. With no hint left
// (a poll read them) and no reader, the cancel under way that the hints
// counted as ends.
func (w *Watcher) startReader() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.hinted) == 0 {
		w.hintsRead()
		return false
	}
	if w.readers == hintedReaders {
		return false // one of them reads these next
	}
	w.readers++
	return true
}

// readHinted reads the rows of every run hinted at since the last read, in
// one query, and cancels those that say cancelled; then again, while hints
// have arrived meanwhile.
func (w *Watcher) readHinted(ctx context.Context) {
	for {
		w.mu.Lock()
		if len(w.hinted) == 0 || ctx.Err() != nil {
			w.readers--
			w.hintsRead()
			w.mu.Unlock()
			return
		}
		ids := make([]string, 0, len(w.hinted))
		for id := range w.hinted {
			if run := w.watched[id]; run != nil && !run.cancelled { // its calls may have ended since
				ids = append(ids, id)
			}
		}
		clear(w.hinted)
		w.mu.Unlock()
		statuses := w.readRows(ctx, ids, &w.freshReads, "reading hinted runs failed; no run is treated as cancelled (the poll reads them again)")
		for _, id := range ids {
			if statuses != nil && statuses[id] != StatusCancelled {
				w.logger.Debug("agent: a cancel hint the run row does not back; nothing cancelled", "run", id, "status", string(statuses[id]))
			}
		}
	}
}

// Poll does one backstop poll now: for when notifications may have been
// missed, such as a listener that has just reconnected.
func (w *Watcher) Poll(ctx context.Context) { w.poll(ctx) }

func (w *Watcher) poll(ctx context.Context) {
	w.mu.Lock()
	ids := make([]string, 0, len(w.watched))
	for id, run := range w.watched {
		if !run.cancelled {
			ids = append(ids, id)
		}
	}
	// This read covers the hinted runs too: their rows were written
	// before their hints arrived, so before now.
	clear(w.hinted)
	w.mu.Unlock()
	w.readRows(ctx, ids, &w.pollReads, "polling run statuses failed; no run is treated as cancelled")
}

// hintsRead, under mu, ends the cancel under way that hints count as (see
// Hint) once every hint has been read and no read of them is under way:
// the calls of the runs the reads found cancelled are counted in signals by
// now.
func (w *Watcher) hintsRead() {
	if w.hinting && w.readers == 0 && len(w.hinted) == 0 {
		w.hinting = false
		w.signals.lower()
	}
}

// readRows reads the rows of ids in one query, counted in reads, and
// cancels the calls of the runs whose row says cancelled: the one place a
// watcher cancels on what the store says. A store error cancels nothing
// (fail-soft) and is logged with failed. It returns the statuses read.
func (w *Watcher) readRows(ctx context.Context, ids []string, reads *atomic.Uint64, failed string) map[string]Status {
	if len(ids) == 0 {
		return nil
	}
	reads.Add(1)
	statuses, err := w.store.RunStatuses(ctx, ids)
	if err != nil {
		if ctx.Err() == nil {
			w.logger.Warn("agent: "+failed, "runs", len(ids), "error", err)
		}
		return nil
	}
	for id, status := range statuses {
		if status == StatusCancelled {
			w.cancel(id)
		}
	}
	return statuses
}

// StoreReads returns how many times the watcher has read run statuses from
// the store, failed reads included: polls, one query per interval however
// many runs are watched (none while nothing is), and fresh reads, one per
// [Watcher.Watch] and one per read of the runs hinted at meanwhile
// ([Watcher.Hint]), however many hints it answers.
func (w *Watcher) StoreReads() (polls, fresh uint64) {
	return w.pollReads.Load(), w.freshReads.Load()
}
