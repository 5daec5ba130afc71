package sqlstore

import (
	"context"
	"testing"
)

// waitQueued waits until the gate has n waiters in all.
func waitQueued(g *writeGate, n int) {
	for {
		g.mu.Lock()
		queued := len(g.urgent) + len(g.normal)
		g.mu.Unlock()
		if queued == n {
			return
		}
	}
}

// An urgent write (a cancel) goes before the writes queued ahead of it;
// writes of one kind keep their order; a waiter whose context ends leaves
// the queue and the gate goes on to the next.
func TestWriteGateLetsUrgentWritesFirst(t *testing.T) {
	g := &writeGate{}
	ctx := t.Context()
	if err := g.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 4)
	enter := func(ctx context.Context, name string) {
		if err := g.acquire(ctx); err != nil {
			order <- name + ": " + err.Error()
			return
		}
		order <- name
		g.release()
	}
	go enter(ctx, "normal 1")
	waitQueued(g, 1)
	go enter(ctx, "normal 2")
	waitQueued(g, 2)
	gone, leave := context.WithCancel(ctx)
	go enter(gone, "normal 3")
	waitQueued(g, 3)
	leave()
	if got := <-order; got != "normal 3: "+context.Canceled.Error() {
		t.Fatalf("a waiter whose context ended got %q", got)
	}
	go enter(urgent(ctx), "urgent")
	waitQueued(g, 3)
	g.release()
	for _, want := range []string{"urgent", "normal 1", "normal 2"} {
		if got := <-order; got != want {
			t.Fatalf("got the gate: %q; want %q", got, want)
		}
	}
	// The last one out frees the gate (the test's timeout catches a gate
	// that stays busy).
	for {
		g.mu.Lock()
		busy, queued := g.busy, len(g.urgent)+len(g.normal)
		g.mu.Unlock()
		if queued != 0 {
			t.Fatalf("%d waiters left after all got the gate", queued)
		}
		if !busy {
			return
		}
	}
}
