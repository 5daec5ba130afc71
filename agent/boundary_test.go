package agent_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

// A run cancelled elsewhere (the row only: this watcher's poll is an hour
// away) while a read-only call runs — a call that finishes as if nothing
// happened — makes no further model call: the tool step's boundary reads
// the row, records the step and stops.
func TestAToolStepBoundaryReadsTheRowBeforeTheNextModelCall(t *testing.T) {
	t.Parallel()
	tap := newLogTap()
	b := setup(t, func(cfg *agent.Config) {
		cfg.WatchInterval = time.Hour
		cfg.Logger = slog.New(tap)
	})
	started, finish := make(chan struct{}), make(chan struct{})
	b.tools.add(&testTool{name: "lookup", effect: agent.EffectReadOnly, run: func(ctx context.Context) (*agent.ToolResult, error) {
		close(started)
		<-finish
		return &agent.ToolResult{Outcome: agent.OutcomeOK, Text: "found"}, nil
	}})
	b.start()
	run := b.submit("alice", turn{Calls: []string{"lookup"}}, turn{Final: "done"})
	<-started
	if ok, err := b.store.Store.RunFinish(context.Background(), run.ID, "", agent.StatusCancelled, agent.ReasonCancelled, ""); !ok || err != nil {
		t.Fatalf("RunFinish = %v, %v", ok, err)
	}
	close(finish)
	if why := tap.waitFor(t, "segment ended", run.ID).attr("why"); why != "run cancelled" {
		t.Fatalf("the segment ended because %q; want run cancelled", why)
	}
	steps := b.steps(run.ID)
	if len(steps) != 2 || steps[1].Tool != "lookup" {
		t.Fatalf("the run has %d steps; want 2: the model's and the call's, and no model turn after the cancel", len(steps))
	}
}
