package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

// A turn that asks for more calls than MaxCallsPerTurn makes none of them:
// the run fails with a reason that names the budget.
func TestTurnOverItsCallBudgetMakesNoCall(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *agent.Config) { c.MaxCallsPerTurn = 3 })
	tool := b.tools.add(&testTool{name: "lookup", effect: agent.EffectReadOnly})
	b.start()
	run := b.submit("alice", turn{Calls: []string{"lookup", "lookup", "lookup", "lookup"}}, turn{Final: "done"})
	got := b.waitStatus(run.ID, agent.StatusFailed)
	if got.Reason != agent.ReasonMaxCallsPerTurn || !strings.Contains(got.Error, "max_calls_per_turn (3)") {
		t.Errorf("run ended %s (%q), want max_calls_per_turn naming the limit", got.Reason, got.Error)
	}
	if n := tool.calls.Load(); n != 0 {
		t.Errorf("%d calls made, want none", n)
	}
	// The turn that asked is on the record, with what it asked for.
	steps := b.steps(run.ID)
	if len(steps) != 1 || steps[0].Kind != agent.StepModel || strings.Count(string(steps[0].Args), `"lookup"`) != 4 {
		t.Errorf("steps = %s, want the one model step with its 4 calls", formatSteps(steps))
	}
}

// A turn exactly at the budget is made in full.
func TestTurnAtItsCallBudgetIsMade(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *agent.Config) { c.MaxCallsPerTurn = 3 })
	tool := b.tools.add(&testTool{name: "lookup", effect: agent.EffectReadOnly})
	b.start()
	run := b.submit("alice", turn{Calls: []string{"lookup", "lookup", "lookup"}}, turn{Final: "done"})
	b.waitStatus(run.ID, agent.StatusCompleted)
	if n := tool.calls.Load(); n != 3 {
		t.Errorf("%d calls made, want 3", n)
	}
}

// The run's budget counts every call its model asked for, across turns: the
// turn that would go past it makes none of its calls.
func TestRunOverItsCallBudgetStopsBeforeTheTurnPastIt(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *agent.Config) { c.MaxCallsPerRun = 5 })
	tool := b.tools.add(&testTool{name: "lookup", effect: agent.EffectReadOnly})
	b.start()
	run := b.submit("alice",
		turn{Calls: []string{"lookup", "lookup"}},
		turn{Calls: []string{"lookup", "lookup", "lookup"}}, // 5: at the budget
		turn{Calls: []string{"lookup"}},                     // 6: past it
		turn{Final: "done"})
	got := b.waitStatus(run.ID, agent.StatusFailed)
	if got.Reason != agent.ReasonMaxCallsPerRun || !strings.Contains(got.Error, "max_calls_per_run (5)") {
		t.Errorf("run ended %s (%q), want max_calls_per_run naming the limit", got.Reason, got.Error)
	}
	if n := tool.calls.Load(); n != 5 {
		t.Errorf("%d calls made, want the 5 within the budget", n)
	}
}

// A turn over the budget that was recorded before a takeover (its worker
// died right after recording it) is not played by the worker that takes
// over: the budget is checked on the rebuilt transcript too.
func TestRecordedTurnOverItsBudgetIsNotPlayedAfterATakeover(t *testing.T) {
	t.Parallel()
	now := time.Now()
	clock := func() time.Time { return now }
	b := setup(t, func(c *agent.Config) { c.MaxCallsPerTurn = 2; c.Now = clock })
	tool := b.tools.add(&testTool{name: "lookup", effect: agent.EffectReadOnly})
	run := b.submit("alice", turn{Calls: []string{"lookup", "lookup", "lookup"}}, turn{Final: "done"})

	ctx, st := context.Background(), b.store.Store
	if r, err := st.RunClaimID(ctx, run.ID, "dead-worker", now.Add(time.Minute)); err != nil || r == nil {
		t.Fatalf("claim: %v, %v", r, err)
	}
	calls := `[{"id":"c0","name":"lookup","arguments":{}},{"id":"c1","name":"lookup","arguments":{}},{"id":"c2","name":"lookup","arguments":{}}]`
	if err := st.StepAppend(ctx, "dead-worker", &agent.Step{RunID: run.ID, Kind: agent.StepModel, Round: 1, Args: []byte(calls)}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute) // the lease lapses
	b.rt.Reap(ctx)
	b.start()
	got := b.waitStatus(run.ID, agent.StatusFailed)
	if got.Reason != agent.ReasonMaxCallsPerTurn {
		t.Errorf("run ended %s, want max_calls_per_turn", got.Reason)
	}
	if n := tool.calls.Load(); n != 0 {
		t.Errorf("%d calls made after the takeover, want none", n)
	}
}
