package mcp

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// timeouts runs the idle timeouts (Timeout, RequestTimeout) of a client's
// requests on one timer, armed for the earliest deadline among them. A
// timer of each request's own cost an allocation and a timer-heap insert
// and removal on every call; here a call that starts while the timer is
// armed for an earlier deadline — every call but the first of a busy
// client under one RequestTimeout — touches no timer at all, and one that
// ends leaves the timer as it is: when it fires it ends the requests that
// are due and re-arms for the next, so no request's timeout ever comes
// early or late.
type timeouts struct {
	epoch time.Time // deadlines are nanoseconds since, on the monotonic clock

	mu      sync.Mutex
	timer   *time.Timer // nil until the first request with a timeout
	armed   int64       // the deadline the timer is set for; 0 if not armed
	pending map[*timeout]struct{}
}

// timeout is one request's idle timeout: stop ends the request's context
// with errCallTimeout once at (nanoseconds since epoch) has passed.
type timeout struct {
	at   atomic.Int64
	stop context.CancelCauseFunc
}

func newTimeouts() *timeouts {
	return &timeouts{epoch: time.Now(), pending: make(map[*timeout]struct{})}
}

func (ts *timeouts) now() int64 { return int64(time.Since(ts.epoch)) }

// start counts d from now for t, whose stop must be set.
func (ts *timeouts) start(t *timeout, d time.Duration) {
	at := ts.now() + int64(d)
	t.at.Store(at)
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.pending[t] = struct{}{}
	ts.arm(at)
}

// restart counts d from now again for t, a request that reported progress.
func (ts *timeouts) restart(t *timeout, d time.Duration) {
	at := ts.now() + int64(d)
	t.at.Store(at)
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if _, ok := ts.pending[t]; ok {
		ts.arm(at) // a later deadline than the armed one changes nothing
	}
}

// stop forgets t: its request has ended.
func (ts *timeouts) stop(t *timeout) {
	ts.mu.Lock()
	delete(ts.pending, t)
	ts.mu.Unlock()
}

// arm makes the timer fire no later than at; ts.mu is held.
func (ts *timeouts) arm(at int64) {
	if ts.armed != 0 && ts.armed <= at {
		return
	}
	ts.armed = at
	d := time.Duration(at - ts.now())
	if ts.timer == nil {
		ts.timer = time.AfterFunc(d, ts.fire)
		return
	}
	ts.timer.Reset(d)
}

// fire ends the requests whose deadline has passed and re-arms the timer
// for the earliest of the others, if any.
func (ts *timeouts) fire() {
	ts.mu.Lock()
	now := ts.now()
	var due []context.CancelCauseFunc
	next := int64(0)
	for t := range ts.pending {
		at := t.at.Load()
		if at <= now {
			due = append(due, t.stop)
			delete(ts.pending, t)
			continue
		}
		if next == 0 || at < next {
			next = at
		}
	}
	ts.armed = 0
	if next != 0 {
		ts.arm(next)
	}
	ts.mu.Unlock()
	for _, stop := range due {
		stop(errCallTimeout)
	}
}

// idle stops the timer if no request is waiting on it, so that a closed
// client leaves no timer behind; a request still running keeps its timeout.
func (ts *timeouts) idle() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.pending) == 0 && ts.timer != nil {
		ts.timer.Stop()
		ts.armed = 0
	}
}
