package agent_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

// A run whose worker died mid non-idempotent write is dead-lettered, never
// retried; one that died mid read is requeued and finishes on another
// worker, without replaying what completed.
func TestReaperAsksTheFence(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		effect agent.Effect
		want   agent.Status
	}{
		{agent.EffectNonIdempotentWrite, agent.StatusFailed},
		{agent.EffectIdempotentWrite, agent.StatusCompleted},
		{agent.EffectReadOnly, agent.StatusCompleted},
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
			now = now.Add(2 * time.Minute) // the lease lapses
			b.rt.Reap(context.Background())
			b.start()
			got := b.waitStatus(run.ID, tt.want)
			if tt.want == agent.StatusFailed {
				if got.Reason != agent.ReasonNotRetryable || tool.calls.Load() != 0 {
					t.Errorf("run = %+v, tool calls %d; want dead-lettered, never retried", got, tool.calls.Load())
				}
				return
			}
			if before.calls.Load() != 0 {
				t.Errorf("the completed write was replayed %d times", before.calls.Load())
			}
			if tool.calls.Load() != 1 {
				t.Errorf("the interrupted call ran %d times on the new worker, want 1", tool.calls.Load())
			}
		})
	}
}

// A segment that lost its lease stops without writing anything — not the
// step of the call it made, not a settlement, not the next call: another
// owner has the run, and its transcript is the thief's to write.
func TestLostLeaseStopsWithoutWriting(t *testing.T) {
	t.Parallel()
	tap := newLogTap()
	// One run at a time: the worker cannot take the requeued run back
	// before the thief does.
	b := setup(t, func(c *agent.Config) {
		c.MaxConcurrentRuns = 1
		c.Logger = slog.New(tap)
	})
	var runID string
	b.tools.add(&testTool{name: "steal", effect: agent.EffectReadOnly, run: func(ctx context.Context) (*agent.ToolResult, error) {
		// Someone else takes the run over: a requeue and a new claim.
		st := b.store.Store
		run, _ := st.RunGet(ctx, runID)
		st.RunRequeue(ctx, runID, run.LeaseOwner)
		st.RunClaim(ctx, "thief", time.Now().Add(time.Hour))
		return &agent.ToolResult{Outcome: agent.OutcomeOK, Text: "ok"}, nil
	}})
	write := b.tools.add(&testTool{name: "write", effect: agent.EffectNonIdempotentWrite})
	run := b.submit("alice", turn{Calls: []string{"steal"}}, turn{Calls: []string{"write"}})
	runID = run.ID
	b.start()
	if why := tap.waitFor(t, "agent: segment ended", run.ID).attr("why"); why != "lease lost" {
		t.Errorf("the segment ended because %q, want lease lost", why)
	}
	got := b.waitStatus(run.ID, agent.StatusRunning)
	if got.LeaseOwner != "thief" || write.calls.Load() != 0 {
		t.Errorf("run = %+v, write calls %d; the old segment must stop and never write", got, write.calls.Load())
	}
	if steps := b.steps(run.ID); len(steps) != 1 {
		t.Errorf("steps = %s; want the model turn only: the segment that lost the run recorded its call", formatSteps(steps))
	}
}

// A worker that shuts down mid non-idempotent write settles nothing and
// leaves the fence stamped, so the run is dead-lettered, not retried.
func TestShutdownMidWriteLeavesTheFence(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	started := make(chan struct{})
	write := b.tools.add(&testTool{name: "write", effect: agent.EffectNonIdempotentWrite, run: blockUntilCancelled(started)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.rt.Run(ctx) }()
	run := b.submit("alice", turn{Calls: []string{"write"}}, turn{Final: "done"})
	<-started
	cancel() // the process stops
	<-done
	got := b.waitStatus(run.ID, agent.StatusRunning)
	if got.PendingEffect != agent.EffectNonIdempotentWrite {
		t.Errorf("fence after shutdown = %q, want it stamped", got.PendingEffect)
	}
	if steps := b.steps(run.ID); len(steps) != 1 {
		t.Errorf("steps = %s; the interrupted call must not be recorded as done", formatSteps(steps))
	}
	if write.calls.Load() != 1 {
		t.Errorf("calls = %d", write.calls.Load())
	}
}

// abandonMidCall plays a worker that dies: it claims the run, records the
// first call (a write, done), stamps the fence of the second call (of
// effect, if a write) with a lease until leaseUntil, and vanishes.
func abandonMidCall(t *testing.T, b *testBundle, runID string, effect agent.Effect, leaseUntil time.Time) {
	t.Helper()
	ctx := context.Background()
	st := b.store.Store
	if r, err := st.RunClaimID(ctx, runID, "dead-worker", leaseUntil); err != nil || r == nil {
		t.Fatalf("claim: %v, %v", r, err)
	}
	for _, step := range []*agent.Step{
		{RunID: runID, Kind: agent.StepModel, Round: 1, Args: []byte(`[{"id":"call_0_0","name":"before","arguments":{}}]`)},
		{RunID: runID, Kind: agent.StepTool, Round: 1, Tool: "before", Outcome: agent.OutcomeOK, Text: "ok"},
		{RunID: runID, Kind: agent.StepModel, Round: 2, Args: []byte(`[{"id":"call_1_0","name":"work","arguments":{}}]`)},
	} {
		if err := st.StepAppend(ctx, "dead-worker", step); err != nil {
			t.Fatal(err)
		}
	}
	if effect.IsWrite() {
		if ok, err := st.RunSetPendingEffect(ctx, runID, "dead-worker", effect, leaseUntil); !ok || err != nil {
			t.Fatalf("stamping the fence: %v, %v", ok, err)
		}
	}
}
