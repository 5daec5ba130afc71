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
	insert(t, s, newRun("r1", t0))
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB: stored whole
	steps := []*agent.Step{
		{RunID: "r1", At: at(time.Second), Kind: agent.StepModel, Round: 1, Text: "I'll look it up.", Duration: 1500 * time.Millisecond},
		{RunID: "r1", At: at(2 * time.Second), Kind: agent.StepApproval, Round: 1, Tool: "write", Args: json.RawMessage(`{"path":"/x"}`), Outcome: agent.OutcomeOK},
		{RunID: "r1", At: at(3 * time.Second), Kind: agent.StepTool, Round: 1, Tool: "search", Args: json.RawMessage(`{"q":"andon","n":3}`), Outcome: agent.OutcomeCancelled, Text: big, Duration: 42 * time.Millisecond},
	}
	for i, st := range steps {
		if err := s.StepAppend(ctx, st); err != nil {
			t.Fatalf("StepAppend %d: %v", i, err)
		}
		if st.Seq != i+1 {
			t.Fatalf("StepAppend %d assigned seq %d, want %d", i, st.Seq, i+1)
		}
	}
	noTime := &agent.Step{RunID: "r1", Kind: agent.StepModel, Round: 2}
	before := time.Now().Add(-time.Second)
	if err := s.StepAppend(ctx, noTime); err != nil {
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
	insert(t, s, newRun("r1", t0))
	insert(t, s, newRun("r2", t0))
	const writers, each = racers, 25
	var mu sync.Mutex
	assigned := map[int]*agent.Step{}
	race(t, writers, func(w int) (bool, error) {
		last := 0
		for i := range each {
			st := &agent.Step{RunID: "r1", At: at(time.Duration(i) * time.Millisecond), Kind: agent.StepTool,
				Round: i, Tool: fmt.Sprintf("writer%d", w), Outcome: agent.OutcomeOK, Text: fmt.Sprintf("%d/%d", w, i)}
			if err := s.StepAppend(ctx, st); err != nil {
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
				if err := s.StepAppend(ctx, &agent.Step{RunID: "r2", At: t0, Kind: agent.StepModel}); err != nil {
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
	err := s.StepAppend(t.Context(), &agent.Step{RunID: "gone", At: t0, Kind: agent.StepModel})
	if !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("StepAppend to an unknown run = %v, want agent.ErrNotFound", err)
	}
}

func testStepAppendFinished(t *testing.T, s agent.Store) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Minute))
	ok, err := s.RunFinish(ctx, "r1", "", agent.StatusCancelled, agent.ReasonCancelled, "")
	mustWin(t, "cancel", ok, err)
	// The tool call in flight when the cancel landed is still recorded.
	st := &agent.Step{RunID: "r1", At: t0, Kind: agent.StepTool, Tool: "write", Outcome: agent.OutcomeCancelled}
	if err := s.StepAppend(ctx, st); err != nil || st.Seq != 1 {
		t.Fatalf("StepAppend to a cancelled run = seq %d, %v; want 1, nil", st.Seq, err)
	}
}
