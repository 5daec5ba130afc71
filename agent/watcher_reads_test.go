package agent_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

// gatedStatuses is a StatusReader that, once gated, holds every read until
// the test releases it, so the test sees each poll one at a time.
type gatedStatuses struct {
	queries atomic.Uint64
	gated   atomic.Bool
	entered chan []string
	release chan struct{}
}

func (g *gatedStatuses) RunStatuses(ctx context.Context, ids []string) (map[string]agent.Status, error) {
	g.queries.Add(1)
	if g.gated.Load() {
		select {
		case g.entered <- ids:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		select {
		case <-g.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return map[string]agent.Status{}, nil
}

// StoreReads counts one fresh read per Watch and one read per poll,
// however many calls the poll covers, and every read the store saw.
func TestWatcherStoreReadsCountsOnePerPoll(t *testing.T) {
	t.Parallel()
	g := &gatedStatuses{entered: make(chan []string), release: make(chan struct{})}
	w := agent.NewWatcher(g, time.Millisecond, nil)
	for _, id := range []string{"a", "a", "b"} {
		_, stop := w.Watch(context.Background(), id)
		defer stop()
	}
	if polls, fresh := w.StoreReads(); polls != 0 || fresh != 3 {
		t.Fatalf("after 3 Watch calls: StoreReads = %d polls, %d fresh; want 0, 3", polls, fresh)
	}

	g.gated.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	for i := uint64(1); i <= 5; i++ {
		ids := <-g.entered
		if len(ids) != 2 {
			t.Errorf("poll %d asked about %d runs, want 2 in one query", i, len(ids))
		}
		if polls, fresh := w.StoreReads(); polls != i || fresh != 3 {
			t.Errorf("during poll %d: StoreReads = %d polls, %d fresh; want %d, 3", i, polls, fresh, i)
		}
		g.release <- struct{}{}
	}
	cancel()
	<-done
	polls, fresh := w.StoreReads()
	if polls+fresh != g.queries.Load() {
		t.Errorf("StoreReads = %d polls + %d fresh, but the store saw %d reads", polls, fresh, g.queries.Load())
	}
}
