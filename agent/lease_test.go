package agent_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

// A short run writes no lease renewal: its claim's lease is fresh at every
// step boundary (renewed only once a third of it has passed). On a clock
// that jumps a minute at every reading, the lease is stale at every
// boundary, and each renews it — but the last, whose record settles the
// run in the same statement (a StepRecorder store), so that there is no
// lease left to renew.
func TestAStepRenewsOnlyAStaleLease(t *testing.T) {
	t.Parallel()
	for _, jumping := range []bool{false, true} {
		b := setup(t, func(cfg *agent.Config) {
			if jumping {
				var readings atomic.Int64
				cfg.Now = func() time.Time { return time.Now().Add(time.Duration(readings.Add(1)) * time.Minute) }
			}
		})
		b.tools.add(&testTool{name: "lookup", effect: agent.EffectReadOnly})
		b.start()
		run := b.submit("alice", turn{Calls: []string{"lookup"}}, turn{Final: "done"})
		b.waitStatus(run.ID, agent.StatusCompleted)
		n := b.store.renewals.Load()
		if !jumping && n != 0 {
			t.Errorf("%d renewals for a one-call run with a fresh lease; want none", n)
		}
		if jumping && n < 2 { // the model step, the tool step; the answer settles
			t.Errorf("%d renewals for a one-call run whose lease is always stale; want one per step but the last (2)", n)
		}
	}
}
