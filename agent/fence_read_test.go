package agent_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

// cancellingTools cancels a run in the store only (no word to the
// runtime) as the runtime looks up the tool of a call, then hands it the
// tool: the cancel lands right before the call's fresh read.
type cancellingTools struct {
	*toolSet
	store *countingStore
}

func (c *cancellingTools) Tool(ctx context.Context, name string) (agent.Tool, error) {
	if id := agent.RunIDFrom(ctx); id != "" {
		if _, err := c.store.Store.RunFinish(ctx, id, "", agent.StatusCancelled, agent.ReasonCancelled, ""); err != nil {
			return nil, err
		}
	}
	return c.toolSet.Tool(ctx, name)
}

// A write call of a run cancelled elsewhere just before it is never made:
// its fence's guarded stamp is the call's fresh read, and it loses; the
// call's step says cancelled, and the fence was never stamped.
func TestAWriteOfARunCancelledJustBeforeItIsNeverMade(t *testing.T) {
	t.Parallel()
	tools := &cancellingTools{}
	b := setup(t, func(cfg *agent.Config) {
		cfg.WatchInterval = time.Hour // no poll: only a read of the row can tell
		cfg.Tools = tools
	})
	tools.toolSet, tools.store = b.tools, b.store
	var called atomic.Bool
	b.tools.add(&testTool{name: "write", effect: agent.EffectNonIdempotentWrite, run: func(context.Context) (*agent.ToolResult, error) {
		called.Store(true)
		return &agent.ToolResult{Outcome: agent.OutcomeOK, Text: "written"}, nil
	}})
	run := b.submit("alice", turn{Calls: []string{"write"}}, turn{Final: "done"})
	if err := b.rt.Work(t.Context(), run.ID); err != nil {
		t.Fatal(err)
	}
	got := b.waitStatus(run.ID, agent.StatusCancelled)
	if called.Load() {
		t.Fatal("the write was made for a run cancelled before it")
	}
	if got.PendingEffect != "" {
		t.Errorf("the fence of a run whose write was never made: %q, want never stamped", got.PendingEffect)
	}
	steps := b.steps(run.ID)
	if len(steps) != 2 || steps[1].Outcome != agent.OutcomeCancelled {
		t.Fatalf("steps %d (last %+v); want 2, the call's cancelled", len(steps), steps[len(steps)-1])
	}
}
