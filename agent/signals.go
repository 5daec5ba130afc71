package agent

import (
	"context"
	"sync"
	"time"
)

// Signals before bookkeeping. When a storm of cancels lands, every
// cancelled call wakes at once, and each, once its call has returned, goes
// on to the run's bookkeeping: the boundary's read of the row, the last
// step's append, the job's completion. On two cores those are the CPU and
// the store's one writer that the calls still waking need to put their
// signals on the wire, and that the cancels still being written need for
// their UPDATE (measured, SQLite, 1,000 in flight, waves of 100: the
// wave's signals went out over 20 ms behind the first runs' appends and
// probes, the cancel itself having taken 8). So a cancelled run's
// bookkeeping first waits, at most signalWait, until no cancel is under
// way in this process and every call a cancel stopped here has returned,
// which for an MCP call means its signal is sent (or queued to the stream
// writer). A cancel made in another process is under way here from its
// hint until the watcher's read of the row has returned ([Watcher.Hint]).
// The row was written first, always: nothing of a cancel waits.

// defaultSignalWait bounds how long a cancelled run's bookkeeping waits for
// the signals of the cancels under way: a storm's take tens of
// milliseconds; a call that ignores its cancel delays the others'
// bookkeeping no longer than this, and never their cancel.
const defaultSignalWait = 250 * time.Millisecond

// signals counts, under Watcher.mu, the cancels under way in this process
// and the calls a cancel stopped that have not returned.
type signals struct {
	pending int
	// quiet is closed when pending falls to zero; nil while it is zero.
	quiet chan struct{}
	// waiting counts the bookkeepings waiting in awaitSignals (tests).
	waiting int
}

func (s *signals) raise() {
	if s.pending == 0 {
		s.quiet = make(chan struct{})
	}
	s.pending++
}

func (s *signals) lower() {
	s.pending--
	if s.pending == 0 {
		close(s.quiet)
		s.quiet = nil
	}
}

// beginCancel counts a cancel under way until end is called (more than
// once is fine): from before its row is written until its calls here are
// cancelled, and so counted themselves.
func (w *Watcher) beginCancel() (end func()) {
	w.mu.Lock()
	w.signals.raise()
	w.mu.Unlock()
	return sync.OnceFunc(func() {
		w.mu.Lock()
		w.signals.lower()
		w.mu.Unlock()
	})
}

// awaitSignals waits until no cancel is under way and every call a cancel
// stopped has returned, at most signalWait, or until ctx ends.
func (w *Watcher) awaitSignals(ctx context.Context) {
	w.mu.Lock()
	quiet := w.signals.quiet
	if quiet != nil {
		w.signals.waiting++
	}
	w.mu.Unlock()
	if quiet == nil {
		return
	}
	t := time.NewTimer(w.signalWait)
	select {
	case <-quiet:
	case <-t.C:
	case <-ctx.Done():
	}
	t.Stop()
	w.mu.Lock()
	w.signals.waiting--
	w.mu.Unlock()
}
