package agent_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/sqlstore/pgtest"
)

// On PostgreSQL, with 500 calls in flight across 50 runs, watching costs one
// status query per interval — counted at the store — and a run cancelled
// in the database (as by another process) reaches its calls by that poll.
func TestWatchingCostsOneQueryPerIntervalOnPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg, err := sqlstore.OpenPostgres(ctx, pgtest.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	counted := &countingStatuses{store: pg, polled: make(chan int, 64)}
	w := agent.NewWatcher(counted, 20*time.Millisecond, nil)

	var ids []string
	for i := range 50 {
		run := &agent.Run{ID: fmt.Sprintf("run_%02d", i), Owner: "o", Request: []byte(`{}`), Status: agent.StatusRunning, CreatedAt: time.Now()}
		if err := pg.RunInsert(ctx, run); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, run.ID)
	}
	var calls []context.Context
	for i := range 500 {
		c, stop := w.Watch(ctx, ids[i%50])
		defer stop()
		calls = append(calls, c)
	}
	reads := counted.queries()
	if reads != 500 {
		t.Fatalf("%d reads to start 500 calls, want one fresh read each", reads)
	}

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); w.Run(runCtx) }()
	defer func() { cancel(); <-done }()
	for range 5 {
		if n := <-counted.polled; n != 50 {
			t.Fatalf("a poll asked about %d runs, want all 50 in one query", n)
		}
	}
	if _, err := pg.RunFinish(ctx, "run_07", "", agent.StatusCancelled, agent.ReasonCancelled, ""); err != nil {
		t.Fatal(err)
	}
	for i, c := range calls {
		if ids[i%50] == "run_07" {
			<-c.Done()
		} else if c.Err() != nil {
			t.Fatalf("a call of %s was cancelled", ids[i%50])
		}
	}
}

// countingStatuses counts status queries and reports each poll's size.
type countingStatuses struct {
	store  agent.StatusReader
	n      atomic.Int64
	polled chan int
}

func (c *countingStatuses) RunStatuses(ctx context.Context, ids []string) (map[string]agent.Status, error) {
	c.inc()
	if len(ids) > 1 {
		select {
		case c.polled <- len(ids):
		default:
		}
	}
	return c.store.RunStatuses(ctx, ids)
}

func (c *countingStatuses) inc()           { c.n.Add(1) }
func (c *countingStatuses) queries() int64 { return c.n.Load() }
