package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

// A direct call is a run of its own, made in the caller's process: the tool
// is called once with the caller's arguments, the run completes, and the
// result names the call's step.
func TestDirectCallIsARunOfItsOwn(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *agent.Config) { c.WorkerID = "gateway-1" })
	tool := b.tools.add(&testTool{name: "lookup", effect: agent.EffectReadOnly})
	res, err := b.rt.Call(context.Background(), "client", &agent.DirectCall{Tool: "lookup", Arguments: json.RawMessage(`{"q":"x"}`), Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Run.Status != agent.StatusCompleted || res.Run.Home != "gateway-1" || res.Run.Owner != "client" {
		t.Errorf("run = %s, home %q, owner %q; want completed, at home, the caller's", res.Run.Status, res.Run.Home, res.Run.Owner)
	}
	if res.Step == nil || res.Step.Outcome != agent.OutcomeOK || res.Step.Tool != "lookup" {
		t.Errorf("step = %+v, want lookup's, ok", res.Step)
	}
	if got := tool.called(); len(got) != 1 || got[0] != `{"q":"x"}` {
		t.Errorf("the tool was called with %v, want once with the caller's arguments", got)
	}
}

// The caller's going away is a cancel of the run: the tool's context ends
// with ErrRunCancelled, the call's step says cancelled, and the run ends
// cancelled with its fence kept.
func TestDirectCallEndsWithItsCaller(t *testing.T) {
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
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	res, err := b.rt.Call(ctx, "client", &agent.DirectCall{Tool: "deploy"})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(cause, agent.ErrRunCancelled) {
		t.Errorf("the tool's context ended with %v, want ErrRunCancelled", cause)
	}
	if res.Run.Status != agent.StatusCancelled || res.Run.PendingEffect != agent.EffectNonIdempotentWrite {
		t.Errorf("run = %s, fence %q; want cancelled, the fence kept", res.Run.Status, res.Run.PendingEffect)
	}
	if res.Step == nil || res.Step.Outcome != agent.OutcomeCancelled {
		t.Errorf("step = %+v, want the call, cancelled", res.Step)
	}
}

// A direct call that needs approval waits for it; a decision made by
// another runtime on the same store hands the run back to the caller's
// process, which makes the call — once — and returns.
func TestDirectCallWaitsForADecisionMadeElsewhere(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *agent.Config) { c.WorkerID = "gateway-1"; c.InputPollInterval = 5 * time.Millisecond })
	type callerKey struct{}
	var atHome atomic.Bool // the call was made with the caller's values: in its process
	tool := b.tools.add(&testTool{name: "deploy", effect: agent.EffectNonIdempotentWrite, approval: true,
		run: func(ctx context.Context) (*agent.ToolResult, error) {
			atHome.Store(ctx.Value(callerKey{}) == "gateway-1's caller")
			return &agent.ToolResult{Outcome: agent.OutcomeOK, Text: "deployed"}, nil
		}})
	// The other runtime works its queue as well: it must not take the call.
	console := b.otherRuntime("serve-1")
	runCtx, stopRun := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		console.Run(runCtx)
	}()
	defer func() { stopRun(); <-ran }()

	type outcome struct {
		res *agent.CallResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		ctx := context.WithValue(context.Background(), callerKey{}, "gateway-1's caller")
		res, err := b.rt.Call(ctx, "alice", &agent.DirectCall{Tool: "deploy", Arguments: json.RawMessage(`{"env":"prod"}`)})
		done <- outcome{res, err}
	}()
	var id string
	for id == "" {
		runs, err := b.store.Store.RunList(context.Background(), agent.RunFilter{Status: agent.StatusWaitingForApproval})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) == 1 {
			id = runs[0].ID
		}
		time.Sleep(2 * time.Millisecond)
	}
	if n := tool.calls.Load(); n != 0 {
		t.Fatalf("the call was made %d times before its approval", n)
	}
	if err := console.Approve(context.Background(), agent.Actor{ID: "alice"}, id); err != nil {
		t.Fatalf("approving from the other runtime: %v", err)
	}
	got := <-done
	if got.err != nil {
		t.Fatal(got.err)
	}
	if got.res.Run.Status != agent.StatusCompleted || got.res.Step == nil || got.res.Step.Outcome != agent.OutcomeOK {
		t.Errorf("run %s, step %+v; want completed with the call ok", got.res.Run.Status, got.res.Step)
	}
	if n := tool.calls.Load(); n != 1 || !atHome.Load() {
		t.Errorf("the approved call was made %d times (in its caller's process: %v), want once, there", n, atHome.Load())
	}
}

// A direct call whose process went away is not handed to another worker:
// the reaper ends it failed, and the call is never made again.
func TestTheReaperEndsADirectCallWhoseProcessWentAway(t *testing.T) {
	t.Parallel()
	now := time.Now()
	clock := func() time.Time { return now }
	b := setup(t, func(c *agent.Config) { c.Now = clock })
	tool := b.tools.add(&testTool{name: "lookup", effect: agent.EffectReadOnly})
	ctx, st := context.Background(), b.store.Store
	run := &agent.Run{ID: "run_gone", Owner: "client", Request: json.RawMessage(`{"prompt":"x","model":"direct","call":{"tool":"lookup"}}`),
		Status: agent.StatusRunning, LeaseOwner: "call:dead:1", LeaseExpires: now.Add(time.Minute), Attempts: 1, CreatedAt: now, Home: "dead"}
	if err := st.RunInsert(ctx, run); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute) // the lease lapses
	b.rt.Reap(ctx)
	b.start()
	got := b.waitStatus(run.ID, agent.StatusFailed)
	if got.Reason != agent.ReasonFailed {
		t.Errorf("reason = %s, want failed", got.Reason)
	}
	if n := tool.calls.Load(); n != 0 {
		t.Errorf("another worker made the call %d times", n)
	}
}

// otherRuntime is a second runtime on the bundle's store, as another
// process would have: it executes nothing here, it decides.
func (b *testBundle) otherRuntime(worker string) *agent.Runtime {
	b.t.Helper()
	rt, err := agent.New(agent.Config{Store: b.store, Tools: b.tools, NewModel: newStepModel, WorkerID: worker,
		WatchInterval: 20 * time.Millisecond, ClaimInterval: 5 * time.Millisecond, ReapInterval: time.Hour})
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(rt.Close)
	return rt
}
