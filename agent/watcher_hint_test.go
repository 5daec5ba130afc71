package agent_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

const strayHint = "a cancel hint the run row does not back"

// A hint is not the truth: it makes the watcher read the row now (the poll
// is an hour away), and only a row that says cancelled cancels. A hint for
// a running run changes nothing; a hint for a run with nothing in flight
// here reads nothing.
func TestWatcherHintReadsTheRowAndOnlyTheRowCancels(t *testing.T) {
	t.Parallel()
	f := &fakeStatuses{statuses: map[string]agent.Status{"r1": agent.StatusRunning, "r2": agent.StatusRunning}}
	tap := newLogTap()
	w := agent.NewWatcher(f, time.Hour, slog.New(tap))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	c1, stop1 := w.Watch(context.Background(), "r1")
	defer stop1()
	c2, stop2 := w.Watch(context.Background(), "r2")
	defer stop2()

	w.Hint("r2") // stray: the row says running
	tap.waitFor(t, strayHint, "r2")
	if c1.Err() != nil || c2.Err() != nil {
		t.Fatalf("a stray hint cancelled a call: r1 %v, r2 %v", context.Cause(c1), context.Cause(c2))
	}

	_, before := w.StoreReads()
	w.Hint("nobody") // no call of it is watched here
	tap.waitFor(t, "no live call here", "nobody")
	if _, after := w.StoreReads(); after != before {
		t.Errorf("a hint for an unwatched run made %d reads, want 0", after-before)
	}

	f.set("r1", agent.StatusCancelled)
	w.Hint("r1")
	select {
	case <-c1.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a hint backed by the row did not cancel the call")
	}
	if !errors.Is(context.Cause(c1), agent.ErrRunCancelled) {
		t.Errorf("cause = %v, want ErrRunCancelled", context.Cause(c1))
	}
	if c2.Err() != nil {
		t.Error("a hint for r1 cancelled r2")
	}
}

// A storm of hints is not a storm of reads: a hint that arrives while a
// read is under way starts a second (the first may be slow), and the hints
// that arrive while both are under way are read together, in one query,
// by whichever returns first.
func TestWatcherCoalescesHints(t *testing.T) {
	t.Parallel()
	w, g, ids, stopRun := gatedWatcher(t, 100)
	defer stopRun()

	w.Hint(ids[0])
	if first := <-g.entered; !slices.Equal(first, ids[:1]) {
		t.Fatalf("the first hint read asked about %v, want [%s]", first, ids[0])
	}
	w.Hint(ids[1]) // while the first is held: a second read, at once
	var second []string
	select {
	case second = <-g.entered:
	case <-time.After(10 * time.Second): // only keeps a broken test from hanging
		g.release <- struct{}{}
		t.Fatal("a hint that came while a read was held waited for it: no second read began")
	}
	if !slices.Equal(second, ids[1:2]) {
		t.Fatalf("the second hint read asked about %v, want [%s]", second, ids[1])
	}
	// While both are held, every other run is hinted at three times.
	for range 3 {
		for _, id := range ids[2:] {
			w.Hint(id)
		}
	}
	g.release <- struct{}{}
	third := <-g.entered
	slices.Sort(third)
	if !slices.Equal(third, ids[2:]) {
		t.Fatalf("the next read asked about %d runs (%v…), want the 98 hinted meanwhile in one query", len(third), third[:min(3, len(third))])
	}
	g.release <- struct{}{}
	g.release <- struct{}{}
	stopRun()
	if _, fresh := w.StoreReads(); fresh != 100+3 {
		t.Errorf("%d fresh reads, want 100 (one per Watch) + 3 for 296 hints", fresh)
	}
}

// Hints given together — the runs one notification names — are all read,
// and together: one query for the watched runs among them, none for the
// run with no call here.
func TestWatcherReadsHintsGivenTogether(t *testing.T) {
	t.Parallel()
	w, g, ids, stopRun := gatedWatcher(t, 100)
	defer stopRun()

	w.Hint(append([]string{"nobody"}, ids...)...)
	var read []string
	for reads := 1; ; reads++ {
		select {
		case got := <-g.entered:
			g.release <- struct{}{}
			read = append(read, got...)
		case <-time.After(10 * time.Second): // only keeps a broken test from hanging
			t.Fatalf("after %d reads, %d of the 100 runs hinted together were read", reads-1, len(read))
		}
		if len(read) >= len(ids) {
			break
		}
	}
	slices.Sort(read)
	if !slices.Equal(read, ids) {
		t.Errorf("the reads asked about %v…; want the 100 watched runs hinted, each once, and not nobody", read[:min(3, len(read))])
	}
}

// gatedWatcher runs a watcher of n runs (r00, r01, …), each with a call in
// flight, whose reads after the first Watch of each wait in g until
// released. stop ends Run and waits for it; it may be called more than
// once. The calls end at cleanup.
func gatedWatcher(t *testing.T, n int) (w *agent.Watcher, g *gatedStatuses, ids []string, stop func()) {
	t.Helper()
	g = &gatedStatuses{entered: make(chan []string), release: make(chan struct{})}
	w = agent.NewWatcher(g, time.Hour, nil)
	for i := range n {
		id := fmt.Sprintf("r%02d", i)
		ids = append(ids, id)
		_, stopWatch := w.Watch(context.Background(), id)
		t.Cleanup(stopWatch)
	}
	g.gated.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	return w, g, ids, func() { cancel(); <-done }
}
