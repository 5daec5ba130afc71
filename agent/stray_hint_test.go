package agent_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

// A hint from outside the process — a notification, the run's job
// cancelled by the engine — that the row does not back leaves a running run
// running and its call in flight untouched, fence and lease included. A
// real cancel (the row, then its hint) still reaches the call, by the hint:
// the poll is an hour away.
func TestAStrayHintLeavesTheRunRunning(t *testing.T) {
	t.Parallel()
	tap := newLogTap()
	q := &handQueue{runs: make(chan string, 1), cancels: map[string]context.CancelFunc{}}
	b := setup(t, func(c *agent.Config) {
		c.Queue = q
		c.WatchInterval = time.Hour
		c.Logger = slog.New(tap)
	})
	started := make(chan struct{})
	var cause error
	b.tools.add(&testTool{name: "deploy", effect: agent.EffectNonIdempotentWrite, run: func(ctx context.Context) (*agent.ToolResult, error) {
		close(started)
		<-ctx.Done()
		cause = context.Cause(ctx)
		return &agent.ToolResult{Outcome: agent.OutcomeCancelled, Text: "cancelled"}, nil
	}})
	b.start()
	run := b.submit("alice", turn{Calls: []string{"deploy"}}, turn{Final: "never"})
	q.runs <- run.ID
	<-started
	before := b.waitStatus(run.ID, agent.StatusRunning)

	b.rt.Watcher().Hint(run.ID) // a stray NOTIFY
	tap.waitFor(t, strayHint, run.ID)
	q.cancelJob(run.ID) // a stray job cancel
	tap.waitFor(t, strayHint, run.ID)

	got := b.waitStatus(run.ID, agent.StatusRunning)
	if got.LeaseOwner != before.LeaseOwner || got.PendingEffect != agent.EffectNonIdempotentWrite {
		t.Errorf("after stray hints: lease %q, fence %q; want %q and the fence stamped", got.LeaseOwner, got.PendingEffect, before.LeaseOwner)
	}
	if steps := b.steps(run.ID); len(steps) != 1 {
		t.Errorf("after stray hints: steps %s; want the model turn only, the call still in flight", formatSteps(steps))
	}

	// A real cancel from another process: the row, then its notification.
	if ok, err := b.store.Store.RunFinish(context.Background(), run.ID, "", agent.StatusCancelled, agent.ReasonCancelled, ""); !ok || err != nil {
		t.Fatalf("cancel: %v, %v", ok, err)
	}
	b.rt.Watcher().Hint(run.ID)
	waitSteps(t, b, run.ID, 2)
	if !errors.Is(cause, agent.ErrRunCancelled) {
		t.Errorf("the call's cause = %v, want ErrRunCancelled", cause)
	}
	if steps := b.steps(run.ID); steps[1].Outcome != agent.OutcomeCancelled {
		t.Errorf("steps = %s; want the call recorded cancelled", formatSteps(steps))
	}
}

// handQueue is a Queue the test drives: it works each run id sent to runs
// as a job, whose context cancelJob cancels, as a job engine does when the
// run's job is cancelled.
type handQueue struct {
	runs    chan string
	mu      sync.Mutex
	cancels map[string]context.CancelFunc
}

func (q *handQueue) Work(ctx context.Context, _ int, work func(ctx context.Context, runID string) error) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return nil
		case id := <-q.runs:
			jobCtx, cancel := context.WithCancel(ctx)
			q.mu.Lock()
			q.cancels[id] = cancel
			q.mu.Unlock()
			wg.Go(func() {
				defer cancel()
				_ = work(jobCtx, id)
			})
		}
	}
}

func (q *handQueue) cancelJob(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.cancels[id]()
}
