package agent_test

import (
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

// A run a queue hands out reads its row only through its guarded writes,
// where those say what a read would: the claim (the run is watched from
// before it), a write's fence (the call's fresh read), the step records
// (the boundaries' probes, with a StepRecorder store). A read-only call
// reads the row once, right before it is sent. A run on its first claim
// reads no steps: it has none.
func TestAQueuedRunReadsItsRowOnlyWhereNoGuardDoes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		effect agent.Effect
		reads  int64
	}{
		{agent.EffectNonIdempotentWrite, 0},
		{agent.EffectReadOnly, 1},
	} {
		t.Run(string(c.effect), func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(cfg *agent.Config) { cfg.WatchInterval = time.Hour }) // no poll
			b.tools.add(&testTool{name: "act", effect: c.effect})
			run := b.submit("alice", turn{Calls: []string{"act"}}, turn{Final: "done"})
			if err := b.rt.Work(t.Context(), run.ID); err != nil {
				t.Fatal(err)
			}
			got := b.waitStatus(run.ID, agent.StatusCompleted)
			if got.PendingEffect != "" {
				t.Errorf("the fence after the run: %q, want cleared", got.PendingEffect)
			}
			if steps := b.steps(run.ID); len(steps) != 3 {
				t.Errorf("%d steps, want 3 (the call, its result, the answer)", len(steps))
			}
			if n := b.store.statusReads.Load(); n != c.reads {
				t.Errorf("%d reads of the run's status, want %d", n, c.reads)
			}
			if n := b.store.stepLists.Load(); n != 0 {
				t.Errorf("%d reads of the steps of a run on its first claim, want 0", n)
			}
		})
	}
}
