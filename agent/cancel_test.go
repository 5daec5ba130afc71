package agent_test

import (
	"context"
	"errors"
	"sync"
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
// executor reads the row afresh right before it. Here the run is cancelled
// in the store only (as by another process: no announcement, and the poll
// is an hour away) after the step-boundary probe and before the call — while
// the executor looks the tool up — and the tool is read-only, so no write
// fence stands in the way either: only the fresh read can stop the call.
func TestNoCallForAnAlreadyCancelledRun(t *testing.T) {
	t.Parallel()
	var runID string
	b := setup(t, func(c *agent.Config) {
		st := c.Store.(*countingStore).Store
		c.Tools = &cancelOnLookup{toolSet: c.Tools.(*toolSet), tool: "fetch", cancel: func(ctx context.Context) {
			if ok, err := st.RunFinish(ctx, runID, "", agent.StatusCancelled, agent.ReasonCancelled, ""); !ok || err != nil {
				t.Errorf("cancel in the store: %v, %v", ok, err)
			}
		}}
		c.WatchInterval = time.Hour
	})
	fetch := b.tools.add(&testTool{name: "fetch", effect: agent.EffectReadOnly})
	run := b.submit("alice", turn{Calls: []string{"fetch"}}, turn{Final: "never"})
	runID = run.ID
	b.start()
	waitSteps(t, b, run.ID, 2)
	if n := fetch.calls.Load(); n != 0 {
		t.Errorf("the tool was called %d times for a run already cancelled", n)
	}
	steps := b.steps(run.ID)
	if len(steps) != 2 || steps[1].Tool != "fetch" || steps[1].Outcome != agent.OutcomeCancelled {
		t.Errorf("steps = %s; want the model turn and the call recorded cancelled", formatSteps(steps))
	}
	if got := b.waitStatus(run.ID, agent.StatusCancelled); got.Reason != agent.ReasonCancelled {
		t.Errorf("reason = %s, want cancelled", got.Reason)
	}
}

// cancelOnLookup runs cancel the first time the executor looks up tool:
// after the step boundary, before the call.
type cancelOnLookup struct {
	*toolSet
	tool   string
	cancel func(context.Context)
	once   sync.Once
}

func (c *cancelOnLookup) Tool(ctx context.Context, name string) (agent.Tool, error) {
	if name == c.tool {
		c.once.Do(func() { c.cancel(ctx) })
	}
	return c.toolSet.Tool(ctx, name)
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
