package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

// recorder is s as an agent.StepRecorder, or skips t.
func recorder(t *testing.T, s agent.Store) agent.StepRecorder {
	t.Helper()
	rec, ok := s.(agent.StepRecorder)
	if !ok {
		t.Skip("the store records steps only with StepAppend")
	}
	return rec
}

// A tool step's record clears the fence and renews the lease, in the same
// statement, on a run its segment holds; on a cancelled run the step goes
// in, the record says cancelled, and the fence stays up.
func testStepRecordClearsFence(t *testing.T, s agent.Store) {
	ctx := t.Context()
	rec := recorder(t, s)
	want := insertRunning(t, s, "r1", "w1", at(time.Minute))
	ok, err := s.RunSetPendingEffect(ctx, "r1", "w1", agent.EffectNonIdempotentWrite, at(2*time.Minute))
	mustWin(t, "a stamp", ok, err)
	st := &agent.Step{RunID: "r1", At: t0, Kind: agent.StepTool, Tool: "write", Outcome: agent.OutcomeOK}
	got, err := rec.StepRecord(ctx, "w1", st, agent.StepThen{ClearFence: true, LeaseUntil: at(3 * time.Minute)})
	if err != nil || st.Seq != 1 || got != (agent.StepRecorded{Done: true}) {
		t.Fatalf("StepRecord clearing the fence = seq %d, %+v, %v; want 1, done, nil", st.Seq, got, err)
	}
	want.LeaseExpires = at(3 * time.Minute)
	mustBe(t, "after a record that cleared the fence", get(t, s, "r1"), want)

	insertRunning(t, s, "r2", "w1", at(time.Minute))
	ok, err = s.RunSetPendingEffect(ctx, "r2", "w1", agent.EffectNonIdempotentWrite, at(2*time.Minute))
	mustWin(t, "a stamp", ok, err)
	ok, err = s.RunFinish(ctx, "r2", "", agent.StatusCancelled, agent.ReasonCancelled, "")
	mustWin(t, "cancel", ok, err)
	cancelled := get(t, s, "r2")
	st = &agent.Step{RunID: "r2", At: t0, Kind: agent.StepTool, Tool: "write", Outcome: agent.OutcomeCancelled}
	got, err = rec.StepRecord(ctx, "w1", st, agent.StepThen{ClearFence: true, LeaseUntil: at(3 * time.Minute)})
	if err != nil || st.Seq != 1 || got != (agent.StepRecorded{Cancelled: true}) {
		t.Fatalf("StepRecord on a cancelled run = seq %d, %+v, %v; want 1, cancelled, nil", st.Seq, got, err)
	}
	if cancelled.PendingEffect != agent.EffectNonIdempotentWrite {
		t.Fatalf("the cancelled run's fence = %q before the record", cancelled.PendingEffect)
	}
	mustBe(t, "a cancelled run after a record (fence still up)", get(t, s, "r2"), cancelled)
}

// The last step's record settles the run in the same statement; a record
// asking for nothing more reports what the row said; a record by a
// segment that does not hold the run writes nothing.
func testStepRecordFinishes(t *testing.T, s agent.Store) {
	ctx := t.Context()
	rec := recorder(t, s)
	insertRunning(t, s, "r1", "w1", at(time.Minute))
	appendStep(t, s, "w1", "r1", 1)
	st := &agent.Step{RunID: "r1", At: t0, Kind: agent.StepModel, Round: 2, Text: "done"}
	got, err := rec.StepRecord(ctx, "w1", st, agent.StepThen{})
	if err != nil || st.Seq != 2 || got != (agent.StepRecorded{}) {
		t.Fatalf("StepRecord asking nothing more = seq %d, %+v, %v; want 2, nothing, nil", st.Seq, got, err)
	}
	st = &agent.Step{RunID: "r1", At: t0, Kind: agent.StepModel, Round: 3, Text: "done"}
	got, err = rec.StepRecord(ctx, "w1", st, agent.StepThen{Finish: agent.StatusCompleted, Reason: agent.ReasonCompleted})
	if err != nil || st.Seq != 3 || got != (agent.StepRecorded{Done: true}) {
		t.Fatalf("StepRecord finishing = seq %d, %+v, %v; want 3, done, nil", st.Seq, got, err)
	}
	if r := get(t, s, "r1"); r.Status != agent.StatusCompleted || r.Reason != agent.ReasonCompleted || r.FinishedAt.IsZero() {
		t.Fatalf("after a record that finished the run: status %s, reason %s, finished %v", r.Status, r.Reason, r.FinishedAt)
	}
	_, err = rec.StepRecord(ctx, "w1", &agent.Step{RunID: "r1", At: t0, Kind: agent.StepModel}, agent.StepThen{})
	if !errors.Is(err, agent.ErrLeaseLost) {
		t.Fatalf("StepRecord after the run finished = %v, want agent.ErrLeaseLost", err)
	}

	insertRunning(t, s, "r2", "w1", at(time.Minute))
	_, err = rec.StepRecord(ctx, "w2", &agent.Step{RunID: "r2", At: t0, Kind: agent.StepModel},
		agent.StepThen{Finish: agent.StatusCompleted, Reason: agent.ReasonCompleted})
	if !errors.Is(err, agent.ErrLeaseLost) {
		t.Fatalf("StepRecord by another segment = %v, want agent.ErrLeaseLost", err)
	}
	if r := get(t, s, "r2"); r.Status != agent.StatusRunning {
		t.Fatalf("a run another segment tried to finish is %s", r.Status)
	}
	if steps, err := s.StepList(ctx, "r2"); err != nil || len(steps) != 0 {
		t.Fatalf("steps of a run another segment recorded to: %d, %v", len(steps), err)
	}
	_, err = rec.StepRecord(ctx, "w1", &agent.Step{RunID: "gone", At: t0, Kind: agent.StepModel}, agent.StepThen{})
	if !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("StepRecord to an unknown run = %v, want agent.ErrNotFound", err)
	}
}
