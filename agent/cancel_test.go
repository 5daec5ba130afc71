package agent_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

// A cancel reaches the call in flight at once: its context is cancelled
// with cause ErrRunCancelled; the call's step is recorded with its own
// outcome (cancelled, not an error); the run ends cancelled without being
// settled again; and the write fence stays stamped, because the write may
// have happened.
func TestCancelStopsTheCallInFlightAndKeepsTheFence(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
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
	<-started
	if fence := b.waitStatus(run.ID, agent.StatusRunning).PendingEffect; fence != agent.EffectNonIdempotentWrite {
		t.Fatalf("fence during the write = %q, want non_idempotent_write", fence)
	}
	if err := b.rt.Cancel(context.Background(), agent.Actor{ID: "alice"}, run.ID); err != nil {
		t.Fatal(err)
	}
	got := b.waitStatus(run.ID, agent.StatusCancelled)
	waitSteps(t, b, run.ID, 2)
	if !errors.Is(cause, agent.ErrRunCancelled) {
		t.Errorf("the call's context cause = %v, want ErrRunCancelled", cause)
	}
	if got.PendingEffect != agent.EffectNonIdempotentWrite {
		t.Errorf("fence after the cancel = %q, want it still stamped", got.PendingEffect)
	}
	if got.Reason != agent.ReasonCancelled {
		t.Errorf("reason = %s: the run was settled again", got.Reason)
	}
	steps := b.steps(run.ID)
	if len(steps) != 2 || steps[1].Outcome != agent.OutcomeCancelled {
		t.Errorf("steps = %s; want the model turn and the cancelled call, nothing after", formatSteps(steps))
	}
	if agent.MayRetry(got.PendingEffect) {
		t.Error("MayRetry says a run cancelled mid non-idempotent write may be retried")
	}
}

func waitSteps(t *testing.T, b *testBundle, id string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(b.steps(id)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("run %s has steps %s, want %d", id, formatSteps(b.steps(id)), n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// The fence: a write is stamped before it runs and cleared once its step
// is recorded; a read is never fenced.
func TestWriteFence(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	seen := map[string]agent.Effect{}
	fenceNow := func(name string) func(ctx context.Context) (*agent.ToolResult, error) {
		return func(ctx context.Context) (*agent.ToolResult, error) {
			runs, _ := b.store.Store.RunList(ctx, agent.RunFilter{Status: agent.StatusRunning})
			seen[name] = runs[0].PendingEffect
			return &agent.ToolResult{Outcome: agent.OutcomeOK, Text: "ok"}, nil
		}
	}
	b.tools.add(&testTool{name: "read", effect: agent.EffectReadOnly, run: fenceNow("read")})
	b.tools.add(&testTool{name: "write", effect: agent.EffectNonIdempotentWrite, run: fenceNow("write")})
	b.tools.add(&testTool{name: "put", effect: agent.EffectIdempotentWrite, run: fenceNow("put")})
	b.start()
	run := b.submit("alice", turn{Calls: []string{"read", "write", "put"}}, turn{Final: "done"})
	got := b.waitStatus(run.ID, agent.StatusCompleted)
	want := map[string]agent.Effect{"read": "", "write": agent.EffectNonIdempotentWrite, "put": agent.EffectIdempotentWrite}
	for name, effect := range want {
		if seen[name] != effect {
			t.Errorf("fence during %s = %q, want %q", name, seen[name], effect)
		}
	}
	if got.PendingEffect != "" {
		t.Errorf("fence after the run = %q, want cleared", got.PendingEffect)
	}
}

// A tool call never goes out for a run that is already cancelled: the
// executor reads the row afresh right before it.
func TestNoCallForAnAlreadyCancelledRun(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	var runID string
	first := b.tools.add(&testTool{name: "first", effect: agent.EffectReadOnly})
	first.run = func(ctx context.Context) (*agent.ToolResult, error) {
		// The run is cancelled in the store only (as by another
		// process): no in-process announcement reaches the watcher.
		b.store.Store.RunFinish(ctx, runID, "", agent.StatusCancelled, agent.ReasonCancelled, "")
		return &agent.ToolResult{Outcome: agent.OutcomeOK, Text: "ok"}, nil
	}
	second := b.tools.add(&testTool{name: "second", effect: agent.EffectNonIdempotentWrite})
	b.start()
	run := b.submit("alice", turn{Calls: []string{"first"}}, turn{Calls: []string{"second"}})
	runID = run.ID
	b.waitStatus(run.ID, agent.StatusCancelled)
	time.Sleep(50 * time.Millisecond) // a call that should not happen gets every chance to
	if n := second.calls.Load(); n != 0 {
		t.Errorf("the tool was called %d times after the run was cancelled", n)
	}
}

// A cancel made by another process (straight into the store) reaches the
// call in flight through the watcher's backstop poll.
func TestCancelFromAnotherProcessReachesTheCallByPoll(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	started := make(chan struct{})
	b.tools.add(&testTool{name: "slow", effect: agent.EffectReadOnly, run: blockUntilCancelled(started)})
	b.start()
	run := b.submit("alice", turn{Calls: []string{"slow"}})
	<-started
	if _, err := b.store.Store.RunFinish(context.Background(), run.ID, "", agent.StatusCancelled, agent.ReasonCancelled, ""); err != nil {
		t.Fatal(err)
	}
	waitSteps(t, b, run.ID, 2)
	if steps := b.steps(run.ID); steps[1].Outcome != agent.OutcomeCancelled {
		t.Errorf("steps = %s", formatSteps(steps))
	}
}
