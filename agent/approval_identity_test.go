package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/andonhq/andon/agent"
)

// An approval covers the call on the tool it was shown on. The tool's
// server is redefined while the run waits (the same name, another
// command): the approval given afterwards does not reach the new server —
// the run records why and waits again, and only a decision on the tool as
// it is now lets the call go, once.
func TestAnApprovalDoesNotCoverARedefinedTool(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *agent.Config) { c.NewModel = scriptModel })
	gated := b.tools.add(&testTool{name: "deploy", effect: agent.EffectNonIdempotentWrite, approval: true})
	gated.setIdentity("sha256:old-server")
	b.start()
	run := b.submitScript("alice", `
steps:
  - tool_calls: [{name: deploy, arguments: {env: staging}}]
  - text: done
`)
	alice := agent.Actor{ID: "alice"}
	first := b.waitPending(run.ID)
	if first.Identity != "sha256:old-server" {
		t.Fatalf("the run waits on identity %q, want the tool's", first.Identity)
	}
	gated.setIdentity("sha256:new-server") // andon.yaml edited while the run waits
	if err := b.rt.Approve(context.Background(), alice, run.ID); err != nil {
		t.Fatal(err)
	}
	again := b.waitPending(run.ID)
	if again.CallRef != first.CallRef || again.Identity != "sha256:new-server" {
		t.Fatalf("the run waits again on %+v (identity %q), want the same call on the new identity", again.CallRef, again.Identity)
	}
	if n := gated.calls.Load(); n != 0 {
		t.Fatalf("the redefined tool was called %d times on the old approval", n)
	}
	var stale *agent.Step
	for _, st := range b.steps(run.ID) {
		if st.Kind == agent.StepApproval && st.Outcome == agent.OutcomeStale {
			stale = st
		}
	}
	if stale == nil || !strings.Contains(stale.Text, "no longer applies") {
		t.Fatalf("no step says why the run waits again: %s", formatSteps(b.steps(run.ID)))
	}

	if err := b.rt.Approve(context.Background(), alice, run.ID); err != nil {
		t.Fatalf("approving the call on the new tool: %v", err)
	}
	b.waitStatus(run.ID, agent.StatusCompleted)
	if n := gated.calls.Load(); n != 1 {
		t.Errorf("the call ran %d times after its approval on the new tool, want 1", n)
	}
	list := b.approvals(run.ID)
	if len(list) != 1 || list[0].Identity != "sha256:new-server" || !list[0].Approved {
		t.Errorf("decisions = %+v, want the one approval on the new identity", list)
	}
}

// A denial holds whatever the tool became: not calling is always safe.
func TestADenialHoldsForARedefinedTool(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *agent.Config) { c.NewModel = scriptModel })
	gated := b.tools.add(&testTool{name: "deploy", effect: agent.EffectNonIdempotentWrite, approval: true})
	gated.setIdentity("sha256:old-server")
	b.start()
	run := b.submitScript("alice", `
steps:
  - tool_calls: [{name: deploy, arguments: {env: staging}}]
  - text: done
`)
	b.waitPending(run.ID)
	gated.setIdentity("sha256:new-server")
	if err := b.rt.Deny(context.Background(), agent.Actor{ID: "alice"}, run.ID); err != nil {
		t.Fatal(err)
	}
	b.waitStatus(run.ID, agent.StatusCompleted)
	if n := gated.calls.Load(); n != 0 {
		t.Errorf("a denied call ran %d times", n)
	}
}
