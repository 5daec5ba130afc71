package agent_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

// fakeStatuses is a StatusReader the test drives, counting its queries.
type fakeStatuses struct {
	mu       sync.Mutex
	statuses map[string]agent.Status
	fail     bool
	queries  atomic.Int64
	polled   chan int // receives the number of ids of each query
}

func (f *fakeStatuses) RunStatuses(_ context.Context, ids []string) (map[string]agent.Status, error) {
	f.queries.Add(1)
	if f.polled != nil {
		select {
		case f.polled <- len(ids):
		default:
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return nil, errors.New("store down")
	}
	out := map[string]agent.Status{}
	for _, id := range ids {
		if s, ok := f.statuses[id]; ok {
			out[id] = s
		}
	}
	return out, nil
}

func (f *fakeStatuses) set(id string, s agent.Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statuses[id] = s
}

// The first read is always fresh: a context watched for a run that is
// already cancelled is done before anything can use it, after exactly one
// read.
func TestWatcherFirstReadIsFresh(t *testing.T) {
	t.Parallel()
	f := &fakeStatuses{statuses: map[string]agent.Status{"r1": agent.StatusCancelled}}
	w := agent.NewWatcher(f, time.Hour, nil)
	ctx, stop := w.Watch(context.Background(), "r1")
	defer stop()
	if !errors.Is(context.Cause(ctx), agent.ErrRunCancelled) {
		t.Fatalf("cause = %v, want ErrRunCancelled", context.Cause(ctx))
	}
	if n := f.queries.Load(); n != 1 {
		t.Errorf("%d reads, want 1", n)
	}
}

// The backstop poll costs one query per interval, however many calls are in
// flight, and none when nothing is.
func TestWatcherPollsOnceForAllCalls(t *testing.T) {
	t.Parallel()
	f := &fakeStatuses{statuses: map[string]agent.Status{}, polled: make(chan int, 1)}
	w := agent.NewWatcher(f, 5*time.Millisecond, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	defer func() { cancel(); <-done }()

	time.Sleep(30 * time.Millisecond) // several intervals with nothing watched
	if n := f.queries.Load(); n != 0 {
		t.Errorf("%d queries with nothing in flight, want 0", n)
	}
	var stops []func()
	ctxs := map[string][]context.Context{}
	for run := range 10 {
		id := fmt.Sprintf("run%d", run)
		f.set(id, agent.StatusRunning)
		for range 50 { // 500 calls in flight
			c, stop := w.Watch(context.Background(), id)
			ctxs[id] = append(ctxs[id], c)
			stops = append(stops, stop)
		}
	}
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	before := f.queries.Load()
	<-f.polled // drain
	for range 5 {
		if ids := <-f.polled; ids != 10 {
			t.Fatalf("a poll asked about %d runs, want all 10 in one query", ids)
		}
	}
	polls := f.queries.Load() - before
	if polls > 7 { // 5 observed, plus at most one either side
		t.Errorf("%d queries for about 5 intervals of 500 calls, want one per interval", polls)
	}
	f.set("run3", agent.StatusCancelled)
	for _, c := range ctxs["run3"] {
		<-c.Done()
		if !errors.Is(context.Cause(c), agent.ErrRunCancelled) {
			t.Fatalf("cause = %v", context.Cause(c))
		}
	}
	for _, c := range ctxs["run4"] {
		if c.Err() != nil {
			t.Fatal("a call of another run was cancelled")
		}
	}
}

// A store error is not a cancellation. And the watcher is monotonic: once a
// read said the run is cancelled, its calls stay cancelled, and a call of
// that run that starts while another is still watched is cancelled at once
// — even while the store fails, or answers "running" (a stale replica).
func TestWatcherIsFailSoftAndMonotonic(t *testing.T) {
	t.Parallel()
	f := &fakeStatuses{statuses: map[string]agent.Status{"r": agent.StatusRunning}, fail: true, polled: make(chan int, 1)}
	w := agent.NewWatcher(f, 2*time.Millisecond, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	defer func() { cancel(); <-done }()

	c1, stop1 := w.Watch(context.Background(), "r")
	defer stop1()
	for range 3 { // the fresh read, then two polls
		if c1.Err() != nil {
			t.Fatal("a failing store cancelled the call")
		}
		select {
		case <-f.polled:
		case <-time.After(10 * time.Second):
			t.Fatal("the watcher stopped reading")
		}
	}
	f.mu.Lock()
	f.fail = false
	f.statuses["r"] = agent.StatusCancelled
	f.mu.Unlock()
	<-c1.Done()
	if !errors.Is(context.Cause(c1), agent.ErrRunCancelled) {
		t.Fatalf("cause = %v, want ErrRunCancelled", context.Cause(c1))
	}

	for _, later := range []struct {
		what string
		set  func()
	}{
		{"fails", func() { f.fail = true }},
		{"says running", func() { f.fail = false; f.statuses["r"] = agent.StatusRunning }},
	} {
		f.mu.Lock()
		later.set()
		f.mu.Unlock()
		c2, stop2 := w.Watch(context.Background(), "r")
		if !errors.Is(context.Cause(c2), agent.ErrRunCancelled) {
			t.Errorf("a call of the cancelled run, started while the store %s: cause %v, want ErrRunCancelled at once", later.what, context.Cause(c2))
		}
		stop2()
		if !errors.Is(context.Cause(c1), agent.ErrRunCancelled) {
			t.Errorf("cause once the store %s = %v, want ErrRunCancelled still", later.what, context.Cause(c1))
		}
	}
}

// In the runtime: a failing status read never cancels a run.
func TestStoreErrorNeverCancelsARun(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.store.failStatus.Store(true)
	b.tools.add(&testTool{name: "slowish", effect: agent.EffectNonIdempotentWrite, run: func(ctx context.Context) (*agent.ToolResult, error) {
		time.Sleep(60 * time.Millisecond) // several watcher polls
		return &agent.ToolResult{Outcome: agent.OutcomeOK, Text: "ok"}, ctx.Err()
	}})
	b.start()
	run := b.submit("alice", turn{Calls: []string{"slowish"}}, turn{Final: "done"})
	b.waitStatus(run.ID, agent.StatusCompleted)
	if n := b.store.statusReads.Load(); n == 0 {
		t.Error("the failing store was never asked")
	}
}

// Poll reads now, not at the next interval (here an hour), for every
// watched run in one query, as the backstop does (after a listener
// reconnects); it cancels only the runs the store says are cancelled.
func TestWatcherPollReadsNow(t *testing.T) {
	t.Parallel()
	f := &fakeStatuses{statuses: map[string]agent.Status{"r1": agent.StatusRunning, "r2": agent.StatusRunning, "r3": agent.StatusRunning}}
	w := agent.NewWatcher(f, time.Hour, nil)
	ctx1, stop1 := w.Watch(context.Background(), "r1")
	defer stop1()
	ctx2, stop2 := w.Watch(context.Background(), "r2")
	defer stop2()
	ctx3, stop3 := w.Watch(context.Background(), "r3")
	defer stop3()

	f.set("r1", agent.StatusCancelled)
	before := f.queries.Load()
	w.Poll(context.Background())
	if n := f.queries.Load() - before; n != 1 {
		t.Errorf("Poll made %d reads, want 1 for all watched runs", n)
	}
	if !errors.Is(context.Cause(ctx1), agent.ErrRunCancelled) || ctx2.Err() != nil || ctx3.Err() != nil {
		t.Fatalf("after Poll: r1 %v, r2 %v, r3 %v; want only r1 cancelled", context.Cause(ctx1), ctx2.Err(), ctx3.Err())
	}
}
