package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/sqlstore"
)

// A job handed out again — River retried it, or rescued it from a worker
// that vanished — finds its run as the row has it: a run found mid
// non-idempotent write is dead-lettered and its tool never called again; a
// run found mid read goes back to the queue and finishes on a worker
// without replaying what completed.
func TestARescuedJobAsksTheFence(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		effect agent.Effect
		after  agent.Status // right after Work
		final  agent.Status
	}{
		{agent.EffectNonIdempotentWrite, agent.StatusFailed, agent.StatusFailed},
		{agent.EffectReadOnly, agent.StatusQueued, agent.StatusCompleted},
	} {
		t.Run(string(tt.effect), func(t *testing.T) {
			t.Parallel()
			now := time.Now()
			clock := func() time.Time { return now }
			b := setup(t, func(c *agent.Config) { c.Now = clock })
			before := b.tools.add(&testTool{name: "before", effect: agent.EffectNonIdempotentWrite})
			tool := b.tools.add(&testTool{name: "work", effect: tt.effect})
			run := b.submit("alice", turn{Calls: []string{"before"}}, turn{Calls: []string{"work"}}, turn{Final: "done"})

			abandonMidCall(t, b, run.ID, tt.effect, now.Add(time.Minute))
			ctx, st := context.Background(), b.store.Store
			now = now.Add(2 * time.Minute) // the lease lapses
			if err := b.rt.Work(ctx, run.ID); err != nil {
				t.Fatalf("Work = %v", err)
			}
			got, err := st.RunGet(ctx, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tt.after || tool.calls.Load() != 0 {
				t.Fatalf("after a rescued job's Work: run %s (%s), tool called %d times; want %s, never called",
					got.Status, got.Reason, tool.calls.Load(), tt.after)
			}
			if tt.after == agent.StatusFailed {
				if got.Reason != agent.ReasonNotRetryable || got.PendingEffect != agent.EffectNonIdempotentWrite {
					t.Fatalf("dead-lettered run = reason %q, fence %q; want not_retryable with the fence kept", got.Reason, got.PendingEffect)
				}
				return
			}
			b.start()
			b.waitStatus(run.ID, tt.final)
			if before.calls.Load() != 0 || tool.calls.Load() != 1 {
				t.Errorf("resumed run: completed write replayed %d times, interrupted read ran %d times; want 0 and 1",
					before.calls.Load(), tool.calls.Load())
			}
		})
	}
}

// Work leaves alone a run it has no business with: one a live worker
// holds (River rescues by time, and a long run may outlive its setting),
// a finished one, a missing one.
func TestWorkLeavesALiveOrFinishedRunAlone(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	tool := b.tools.add(&testTool{name: "work", effect: agent.EffectReadOnly})
	ctx := context.Background()
	st := b.store.Store
	live := b.submit("alice", turn{Calls: []string{"work"}})
	if r, err := st.RunClaimID(ctx, live.ID, "live-worker", time.Now().Add(time.Hour)); err != nil || r == nil {
		t.Fatalf("claim: %v, %v", r, err)
	}
	done := b.submit("alice", turn{Calls: []string{"work"}})
	if ok, err := st.RunFinish(ctx, done.ID, "", agent.StatusCancelled, agent.ReasonCancelled, ""); !ok || err != nil {
		t.Fatalf("cancel: %v, %v", ok, err)
	}
	for _, id := range []string{live.ID, done.ID, "run_missing"} {
		if err := b.rt.Work(ctx, id); err != nil {
			t.Fatalf("Work(%s) = %v; want nil", id, err)
		}
	}
	if got, _ := st.RunGet(ctx, live.ID); got.LeaseOwner != "live-worker" || got.Attempts != 1 {
		t.Errorf("a run a live worker holds: owner %q, attempts %d after Work; want live-worker, 1", got.LeaseOwner, got.Attempts)
	}
	if got, _ := st.RunGet(ctx, done.ID); got.Status != agent.StatusCancelled {
		t.Errorf("a cancelled run is %s after Work; want cancelled", got.Status)
	}
	if n := tool.calls.Load(); n != 0 {
		t.Errorf("the tool was called %d times; want 0", n)
	}
}

// With River as the queue, runs are handed out by River; a cancel made by
// another process (the row, then the run's job) reaches the call in flight
// through the job — the watcher's poll is an hour away — and the run ends
// cancelled with its call's outcome recorded.
func TestRiverQueueRunsRunsAndCarriesACancel(t *testing.T) {
	t.Parallel()
	var st *sqlstore.Store
	b := setup(t, func(c *agent.Config) {
		st = c.Store.(*countingStore).Store
		c.Queue = st.Queue(sqlstore.QueueOptions{})
		c.WatchInterval = time.Hour
	})
	b.tools.add(&testTool{name: "quick", effect: agent.EffectReadOnly})
	started := make(chan struct{})
	b.tools.add(&testTool{name: "slow", effect: agent.EffectReadOnly, run: blockUntilCancelled(started)})
	b.start()

	quick := b.submit("alice", turn{Calls: []string{"quick"}}, turn{Final: "done"})
	b.waitStatus(quick.ID, agent.StatusCompleted)

	slow := b.submit("alice", turn{Calls: []string{"slow"}})
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("River never handed out the run")
	}
	other, err := sqlstore.Open(context.Background(), b.path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if ok, err := other.RunFinish(context.Background(), slow.ID, "", agent.StatusCancelled, agent.ReasonCancelled, ""); !ok || err != nil {
		t.Fatalf("cancel from another store: %v, %v", ok, err)
	}
	if err := other.CancelRunJob(context.Background(), slow.ID); err != nil {
		t.Fatal(err)
	}
	waitSteps(t, b, slow.ID, 2)
	if steps := b.steps(slow.ID); steps[1].Outcome != agent.OutcomeCancelled {
		t.Errorf("steps = %s; want the slow call cancelled", formatSteps(steps))
	}
}
