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

// A store error is not a cancellation, and a cancelled context stays
// cancelled whatever the store says later.
func TestWatcherIsFailSoftAndMonotonic(t *testing.T) {
	t.Parallel()
	f := &fakeStatuses{statuses: map[string]agent.Status{"r": agent.StatusRunning}, fail: true, polled: make(chan int, 1)}
	w := agent.NewWatcher(f, 2*time.Millisecond, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	defer func() { cancel(); <-done }()

	c, stop := w.Watch(context.Background(), "r")
	defer stop()
	<-f.polled
	<-f.polled
	if c.Err() != nil {
		t.Fatal("a failing store cancelled the call")
	}
	w.Cancelled("r")
	<-c.Done()
	f.mu.Lock()
	f.fail = false
	f.mu.Unlock()
	<-f.polled
	if !errors.Is(context.Cause(c), agent.ErrRunCancelled) {
		t.Errorf("cause after the store recovered = %v, want ErrRunCancelled still", context.Cause(c))
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

// Poll and Check read now, not at the next interval (here an hour): Poll
// for every watched run in one query, as the backstop does (after a
// listener reconnects); Check for one run (a job engine's hint). Neither
// cancels a run the store does not say is cancelled.
func TestWatcherPollAndCheckReadNow(t *testing.T) {
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

	w.Check(context.Background(), "r2") // a hint the store does not back
	if ctx2.Err() != nil {
		t.Fatalf("Check cancelled r2, which the store says is running")
	}
	f.set("r2", agent.StatusCancelled)
	w.Check(context.Background(), "r2")
	if !errors.Is(context.Cause(ctx2), agent.ErrRunCancelled) || ctx3.Err() != nil {
		t.Fatalf("after Check(r2): r2 %v, r3 %v; want r2 cancelled only", context.Cause(ctx2), ctx3.Err())
	}
}
