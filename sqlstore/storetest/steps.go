package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

func stepDiff(got, want *agent.Step) string {
	if got.RunID != want.RunID || got.Seq != want.Seq || !got.At.Equal(want.At) || got.Kind != want.Kind ||
		got.Round != want.Round || got.Tool != want.Tool || !jsonEqual(got.Args, want.Args) ||
		got.Outcome != want.Outcome || got.Text != want.Text || got.Duration != want.Duration {
		return fmt.Sprintf("step %d = {%s %d %v %s round %d %q %s %s text[%d] %v}, want {%s %d %v %s round %d %q %s %s text[%d] %v}",
			want.Seq, got.RunID, got.Seq, got.At, got.Kind, got.Round, got.Tool, got.Args, got.Outcome, len(got.Text), got.Duration,
			want.RunID, want.Seq, want.At, want.Kind, want.Round, want.Tool, want.Args, want.Outcome, len(want.Text), want.Duration)
	}
	return ""
}

func testStepRoundTrip(t *testing.T, s agent.Store) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Hour))
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB: stored whole
	steps := []*agent.Step{
		{RunID: "r1", At: at(time.Second), Kind: agent.StepModel, Round: 1, Text: "I'll look it up.", Duration: 1500 * time.Millisecond},
		{RunID: "r1", At: at(2 * time.Second), Kind: agent.StepApproval, Round: 1, Tool: "write", Args: json.RawMessage(`{"path":"/x"}`), Outcome: agent.OutcomeOK},
		{RunID: "r1", At: at(3 * time.Second), Kind: agent.StepTool, Round: 1, Tool: "search", Args: json.RawMessage(`{"q":"andon","n":3}`), Outcome: agent.OutcomeCancelled, Text: big, Duration: 42 * time.Millisecond},
	}
	for i, st := range steps {
		if err := s.StepAppend(ctx, "w1", st); err != nil {
			t.Fatalf("StepAppend %d: %v", i, err)
		}
		if st.Seq != i+1 {
			t.Fatalf("StepAppend %d assigned seq %d, want %d", i, st.Seq, i+1)
		}
	}
	noTime := &agent.Step{RunID: "r1", Kind: agent.StepModel, Round: 2}
	before := time.Now().Add(-time.Second)
	if err := s.StepAppend(ctx, "w1", noTime); err != nil {
		t.Fatal(err)
	}
	if noTime.At.Before(before) {
		t.Fatalf("StepAppend left At %v; want it set to now", noTime.At)
	}
	steps = append(steps, noTime)
	got, err := s.StepList(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(steps) {
		t.Fatalf("StepList returned %d steps, want %d", len(got), len(steps))
	}
	for i := range steps {
		if d := stepDiff(got[i], steps[i]); d != "" {
			t.Fatal(d)
		}
	}
	if got, err := s.StepList(ctx, "gone"); err != nil || len(got) != 0 {
		t.Fatalf("StepList(unknown run) = %v, %v; want none", got, err)
	}
}

func testStepsConcurrent(t *testing.T, s agent.Store) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Hour))
	insertRunning(t, s, "r2", "w1", at(time.Hour))
	const writers, each = racers, 25
	var mu sync.Mutex
	assigned := map[int]*agent.Step{}
	race(t, writers, func(w int) (bool, error) {
		last := 0
		for i := range each {
			st := &agent.Step{RunID: "r1", At: at(time.Duration(i) * time.Millisecond), Kind: agent.StepTool,
				Round: i, Tool: fmt.Sprintf("writer%d", w), Outcome: agent.OutcomeOK, Text: fmt.Sprintf("%d/%d", w, i)}
			if err := s.StepAppend(ctx, "w1", st); err != nil {
				return false, err
			}
			if st.Seq <= last {
				return false, fmt.Errorf("writer %d: seq %d after %d", w, st.Seq, last)
			}
			last = st.Seq
			mu.Lock()
			if prev, dup := assigned[st.Seq]; dup {
				mu.Unlock()
				return false, fmt.Errorf("seq %d given to %s and %s", st.Seq, prev.Text, st.Text)
			}
			assigned[st.Seq] = st
			mu.Unlock()
			// Another run's steps, interleaved, are numbered on their own.
			if w == 0 {
				if err := s.StepAppend(ctx, "w1", &agent.Step{RunID: "r2", At: t0, Kind: agent.StepModel}); err != nil {
					return false, err
				}
			}
		}
		return true, nil
	})
	got, err := s.StepList(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != writers*each {
		t.Fatalf("StepList returned %d steps, want %d", len(got), writers*each)
	}
	for i, st := range got {
		if st.Seq != i+1 {
			t.Fatalf("step %d has seq %d: seqs must be 1…n in order", i, st.Seq)
		}
		if d := stepDiff(st, assigned[st.Seq]); d != "" {
			t.Fatal(d)
		}
	}
	other, err := s.StepList(ctx, "r2")
	if err != nil || len(other) != each || other[0].Seq != 1 || other[each-1].Seq != each {
		t.Fatalf("the other run's steps: %d, %v; want seqs 1…%d", len(other), err, each)
	}
}

func testStepAppendUnknown(t *testing.T, s agent.Store) {
	err := s.StepAppend(t.Context(), "w1", &agent.Step{RunID: "gone", At: t0, Kind: agent.StepModel})
	if !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("StepAppend to an unknown run = %v, want agent.ErrNotFound", err)
	}
}

// The segment that held a run when it was cancelled records the step that
// was in flight; no other segment can, and nothing after a settlement can.
func testStepAppendCancelled(t *testing.T, s agent.Store) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Minute))
	ok, err := s.RunFinish(ctx, "r1", "", agent.StatusCancelled, agent.ReasonCancelled, "")
	mustWin(t, "cancel", ok, err)
	st := &agent.Step{RunID: "r1", At: t0, Kind: agent.StepTool, Tool: "write", Outcome: agent.OutcomeCancelled}
	if err := s.StepAppend(ctx, "w1", st); err != nil || st.Seq != 1 {
		t.Fatalf("StepAppend to a cancelled run by its segment = seq %d, %v; want 1, nil", st.Seq, err)
	}
	mustLoseStep(t, s, "w2", "r1", "by another segment, after the cancel", 1)

	insertRunning(t, s, "r2", "w1", at(time.Minute))
	ok, err = s.RunFinish(ctx, "r2", "w1", agent.StatusCompleted, agent.ReasonCompleted, "")
	mustWin(t, "settle", ok, err)
	mustLoseStep(t, s, "w1", "r2", "after the segment settled the run", 0)
}

// A segment that does not hold the run — never did, or lost it to a
// requeue, a suspension or the reaper — appends nothing, and is told so
// with agent.ErrLeaseLost; the segment that holds it now appends as usual.
func testStepAppendNeedsTheLease(t *testing.T, s agent.Store) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Minute))
	appendStep(t, s, "w1", "r1", 1)
	mustLoseStep(t, s, "w2", "r1", "by a segment that never held the run", 1)
	mustLoseStep(t, s, "", "r1", "with no owner", 1)

	// The lease lapses; the reaper requeues the run and w2 claims it.
	ok, err := s.RunRequeueStale(ctx, "r1", at(2*time.Minute))
	mustWin(t, "stale requeue", ok, err)
	mustLoseStep(t, s, "w1", "r1", "by the old segment of a requeued run", 1)
	mustLoseStep(t, s, "", "r1", "with no owner, to a queued run", 1)
	if r, err := s.RunClaimID(ctx, "r1", "w2", at(time.Hour)); err != nil || r == nil {
		t.Fatalf("RunClaimID = %v, %v", r, err)
	}
	mustLoseStep(t, s, "w1", "r1", "by the old segment of a run another claimed", 1)
	appendStep(t, s, "w2", "r1", 2)

	// Suspended: nobody holds it until it is resumed.
	ok, err = s.RunSuspend(ctx, "r1", "w2", agent.StatusWaitingForApproval, []byte(`{"s":1}`))
	mustWin(t, "suspend", ok, err)
	mustLoseStep(t, s, "w2", "r1", "by the segment that suspended the run", 2)
	if r, err := s.RunResume(ctx, "r1", agent.StatusWaitingForApproval, "w3", at(time.Hour)); err != nil || r == nil {
		t.Fatalf("RunResume = %v, %v", r, err)
	}
	appendStep(t, s, "w3", "r1", 3)

	// Dead-lettered by the reaper: the segment's lease lapsed.
	insertRunning(t, s, "r2", "w1", at(time.Minute))
	ok, err = s.RunFinishStale(ctx, "r2", at(2*time.Minute), agent.StatusFailed, agent.ReasonNotRetryable, "lease expired")
	mustWin(t, "stale finish", ok, err)
	mustLoseStep(t, s, "w1", "r2", "by the segment of a run the reaper finished", 0)
}

func appendStep(t *testing.T, s agent.Store, owner, runID string, wantSeq int) {
	t.Helper()
	st := &agent.Step{RunID: runID, At: t0, Kind: agent.StepModel, Text: owner}
	if err := s.StepAppend(t.Context(), owner, st); err != nil || st.Seq != wantSeq {
		t.Fatalf("StepAppend by %s = seq %d, %v; want %d, nil", owner, st.Seq, err, wantSeq)
	}
}

// mustLoseStep appends a step to runID for owner, which must not hold the
// run, and checks that the run still has exactly had steps.
func mustLoseStep(t *testing.T, s agent.Store, owner, runID, what string, had int) {
	t.Helper()
	err := s.StepAppend(t.Context(), owner, &agent.Step{RunID: runID, At: t0, Kind: agent.StepTool, Tool: "stale", Text: "from " + owner})
	if owner != "" && !errors.Is(err, agent.ErrLeaseLost) {
		t.Fatalf("StepAppend %s = %v; want agent.ErrLeaseLost", what, err)
	}
	if owner == "" && err == nil {
		t.Fatalf("StepAppend %s succeeded; want it refused", what)
	}
	steps, err := s.StepList(t.Context(), runID)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != had {
		t.Fatalf("after a StepAppend %s, the run has %d steps; want %d", what, len(steps), had)
	}
}
