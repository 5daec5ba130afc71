package agent_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/andonhq/andon/agent"
)

// A tool that requires approval suspends the run before it runs; an
// approval resumes it in a new segment and the call is made once.
func TestApprovalResumesAndRunsTheCall(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	tool := b.tools.add(&testTool{name: "deploy", effect: agent.EffectNonIdempotentWrite, approval: true})
	b.start()
	run := b.submit("alice", turn{Calls: []string{"deploy"}}, turn{Final: "deployed"})
	waiting := b.waitStatus(run.ID, agent.StatusWaitingForApproval)
	if tool.calls.Load() != 0 || waiting.LeaseOwner != "" || len(waiting.Suspended) == 0 {
		t.Fatalf("waiting run = %+v, calls %d: the call must wait, the lease be released, the state kept", waiting, tool.calls.Load())
	}
	if err := b.rt.Approve(context.Background(), agent.Actor{ID: "alice"}, run.ID); err != nil {
		t.Fatal(err)
	}
	b.waitStatus(run.ID, agent.StatusCompleted)
	if n := tool.calls.Load(); n != 1 {
		t.Errorf("the approved call ran %d times, want 1", n)
	}
	steps := b.steps(run.ID)
	if len(steps) != 4 || steps[1].Kind != agent.StepApproval || steps[2].Outcome != agent.OutcomeOK {
		t.Errorf("steps = %s", formatSteps(steps))
	}
}

func TestDenialTellsTheModel(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	tool := b.tools.add(&testTool{name: "deploy", effect: agent.EffectNonIdempotentWrite, approval: true})
	b.start()
	run := b.submit("alice", turn{Calls: []string{"deploy"}}, turn{Final: "ok, not deploying"})
	b.waitStatus(run.ID, agent.StatusWaitingForApproval)
	if err := b.rt.Deny(context.Background(), agent.Actor{ID: "root", Admin: true}, run.ID); err != nil {
		t.Fatal(err)
	}
	b.waitStatus(run.ID, agent.StatusCompleted)
	if tool.calls.Load() != 0 {
		t.Error("a denied call ran")
	}
	if steps := b.steps(run.ID); steps[2].Outcome != agent.OutcomeDenied {
		t.Errorf("steps = %s", formatSteps(steps))
	}
}

// Two operators approve at once: one wins, the call runs once.
func TestConcurrentApprovalsOneWinner(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	tool := b.tools.add(&testTool{name: "deploy", effect: agent.EffectNonIdempotentWrite, approval: true})
	b.start()
	run := b.submit("alice", turn{Calls: []string{"deploy"}}, turn{Final: "done"})
	b.waitStatus(run.ID, agent.StatusWaitingForApproval)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.rt.Approve(context.Background(), agent.Actor{ID: "alice"}, run.ID)
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, agent.ErrNotWaiting) && !errors.Is(err, agent.ErrFinished):
			// The loser finds the run resumed, or (if the winner was
			// quick) already finished.
			t.Errorf("losing approval = %v, want ErrNotWaiting or ErrFinished", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d approvals won, want 1", won)
	}
	b.waitStatus(run.ID, agent.StatusCompleted)
	if n := tool.calls.Load(); n != 1 {
		t.Errorf("the call ran %d times, want 1", n)
	}
}

// A cancelled run cannot be resumed: the resumable state is gone.
func TestCancelledRunCannotBeApproved(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	tool := b.tools.add(&testTool{name: "deploy", effect: agent.EffectNonIdempotentWrite, approval: true})
	b.start()
	run := b.submit("alice", turn{Calls: []string{"deploy"}})
	b.waitStatus(run.ID, agent.StatusWaitingForApproval)
	alice := agent.Actor{ID: "alice"}
	if err := b.rt.Cancel(context.Background(), alice, run.ID); err != nil {
		t.Fatal(err)
	}
	if err := b.rt.Approve(context.Background(), alice, run.ID); !errors.Is(err, agent.ErrFinished) {
		t.Errorf("Approve of a cancelled run = %v, want ErrFinished", err)
	}
	got := b.waitStatus(run.ID, agent.StatusCancelled)
	if len(got.Suspended) != 0 || tool.calls.Load() != 0 {
		t.Errorf("cancelled run keeps state %q, calls %d", got.Suspended, tool.calls.Load())
	}
	if err := b.rt.Approve(context.Background(), agent.Actor{ID: "mallory"}, run.ID); !errors.Is(err, agent.ErrForbidden) {
		t.Errorf("Approve by a stranger = %v, want ErrForbidden", err)
	}
}

// A process that executes nothing (the API alone) hands an approved run back
// to the queue; a worker goes on with it, making the approved call once,
// without asking again.
func TestApprovalResumesElsewhere(t *testing.T) {
	t.Parallel()
	api := setup(t, func(c *agent.Config) { c.ResumeElsewhere = true })
	tool := api.tools.add(&testTool{name: "deploy", effect: agent.EffectNonIdempotentWrite, approval: true})
	api.start() // executes the run up to its suspension
	run := api.submit("alice", turn{Calls: []string{"deploy"}}, turn{Final: "deployed"})
	api.waitStatus(run.ID, agent.StatusWaitingForApproval)
	if err := api.rt.Approve(context.Background(), agent.Actor{ID: "alice"}, run.ID); err != nil {
		t.Fatal(err)
	}
	got := api.waitStatus(run.ID, agent.StatusCompleted) // a worker of the same store went on
	if n := tool.calls.Load(); n != 1 {
		t.Errorf("the approved call ran %d times, want 1", n)
	}
	if got.Attempts != 2 {
		t.Errorf("attempts = %d, want 2: claimed again from the queue", got.Attempts)
	}
}
