package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

// InputStore is what the questions suite needs: runs and their questions.
type InputStore interface {
	agent.Store
	agent.InputStore
}

// ExerciseInputs runs the conformance suite of [agent.InputStore]: the
// questions servers ask operators during runs, and the two transitions of
// a run that waits for one.
func ExerciseInputs(t *testing.T, newStore func(t *testing.T) InputStore) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s InputStore)
	}{
		{"AQuestionComesBackWholeAndItsRunWaitsHeld", testInputRoundTrip},
		{"OnlyTheLeaseOwnerOfARunningRunAsks", testInputNeedsTheLease},
		{"AQuestionIsRepliedOnce", testInputRepliedOnce},
		{"TheHolderTakesTheAnswerAndItsContentIsCleared", testInputDone},
		{"ACancelWhileWaitingKeepsTheRunCancelled", testInputCancelled},
		{"AWaitingRunRenewsItsLeaseAndGoesStaleIfItsHolderDies", testInputStale},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newStore(t))
		})
	}
}

func question(id, run string) *agent.InputRequest {
	return &agent.InputRequest{ID: id, RunID: run, Server: "forms", Tool: "mcp_forms_elicit", Mode: agent.InputForm,
		Message: "Which colour?", Schema: json.RawMessage(`{"type":"object","properties":{"colour":{"type":"string"}}}`),
		Status: agent.InputPending, CreatedAt: at(time.Second), ExpiresAt: at(time.Minute)}
}

func mustAwait(t *testing.T, s InputStore, q *agent.InputRequest, owner string) {
	t.Helper()
	ok, err := s.RunAwaitInput(t.Context(), q, owner)
	mustWin(t, "RunAwaitInput", ok, err)
}

func getInput(t *testing.T, s InputStore, id string) *agent.InputRequest {
	t.Helper()
	q, err := s.InputGet(t.Context(), id)
	if err != nil {
		t.Fatalf("InputGet(%s): %v", id, err)
	}
	return q
}

func testInputRoundTrip(t *testing.T, s InputStore) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Hour))
	want := question("q1", "r1")
	mustAwait(t, s, want, "w1")
	run := get(t, s, "r1")
	if run.Status != agent.StatusWaitingForInput || run.LeaseOwner != "w1" || !run.LeaseExpires.Equal(at(time.Hour)) {
		t.Fatalf("run after RunAwaitInput = %s held by %q until %v; want waiting_for_input, still held by w1", run.Status, run.LeaseOwner, run.LeaseExpires)
	}
	got := getInput(t, s, "q1")
	if got.RunID != "r1" || got.Server != want.Server || got.Tool != want.Tool || got.Mode != want.Mode || got.Message != want.Message ||
		!jsonEqual(got.Schema, want.Schema) || got.Status != agent.InputPending || got.Content != nil || got.By != "" ||
		!got.CreatedAt.Equal(want.CreatedAt) || !got.ExpiresAt.Equal(want.ExpiresAt) || !got.AnsweredAt.IsZero() {
		t.Fatalf("InputGet = %+v, want %+v", got, want)
	}
	p, err := s.InputPending(ctx, "r1")
	if err != nil || p == nil || p.ID != "q1" {
		t.Fatalf("InputPending(r1) = %+v, %v; want q1", p, err)
	}
	if _, err := s.InputGet(ctx, "nope"); !errors.Is(err, agent.ErrInputNotFound) {
		t.Fatalf("InputGet(unknown) error = %v, want ErrInputNotFound", err)
	}
	if p, err := s.InputPending(ctx, "r2"); err != nil || p != nil {
		t.Fatalf("InputPending of a run with none = %+v, %v", p, err)
	}
	url := question("q2", "r3")
	url.Mode, url.Schema, url.URL = agent.InputURL, nil, "https://example.com/connect"
	insertRunning(t, s, "r3", "w1", at(time.Hour))
	mustAwait(t, s, url, "w1")
	if got := getInput(t, s, "q2"); got.Mode != agent.InputURL || got.URL != url.URL || got.Schema != nil {
		t.Fatalf("url question = %+v", got)
	}
}

func testInputNeedsTheLease(t *testing.T, s InputStore) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Hour))
	ok, err := s.RunAwaitInput(ctx, question("q1", "r1"), "w2")
	mustLose(t, "RunAwaitInput by a non-owner", ok, err)
	ok, err = s.RunAwaitInput(ctx, question("q1", "r1"), "")
	mustRefuse(t, "RunAwaitInput with an empty owner", ok, err)
	if _, err := s.InputGet(ctx, "q1"); !errors.Is(err, agent.ErrInputNotFound) {
		t.Fatalf("a question that lost its guard was stored: %v", err)
	}
	insertWaiting(t, s, "r2", "w1", []byte(`{"step":1}`))
	ok, err = s.RunAwaitInput(ctx, question("q2", "r2"), "w1")
	mustLose(t, "RunAwaitInput on a run waiting for approval", ok, err)
	if got := get(t, s, "r1"); got.Status != agent.StatusRunning {
		t.Fatalf("run r1 = %s after lost asks, want running", got.Status)
	}
}

func testInputRepliedOnce(t *testing.T, s InputStore) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Hour))
	mustAwait(t, s, question("q1", "r1"), "w1")
	ok, err := s.InputAnswer(ctx, "q1", agent.InputAccepted, json.RawMessage(`{"colour":"red"}`), "alice", at(2*time.Second))
	mustWin(t, "InputAnswer", ok, err)
	ok, err = s.InputAnswer(ctx, "q1", agent.InputDeclined, nil, "bob", at(3*time.Second))
	mustLose(t, "a second reply", ok, err)
	got := getInput(t, s, "q1")
	if got.Status != agent.InputAccepted || got.By != "alice" || !jsonEqual(got.Content, []byte(`{"colour":"red"}`)) || !got.AnsweredAt.Equal(at(2*time.Second)) {
		t.Fatalf("answered question = %+v", got)
	}
	if p, _ := s.InputPending(ctx, "r1"); p != nil {
		t.Fatalf("InputPending after the answer = %+v, want none", p)
	}
	ok, err = s.InputAnswer(ctx, "q1", agent.InputPending, nil, "bob", at(3*time.Second))
	mustRefuse(t, "InputAnswer back to pending", ok, err)
}

func testInputDone(t *testing.T, s InputStore) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Hour))
	mustAwait(t, s, question("q1", "r1"), "w1")
	ok, err := s.InputAnswer(ctx, "q1", agent.InputAccepted, json.RawMessage(`{"colour":"red"}`), "alice", at(2*time.Second))
	mustWin(t, "InputAnswer", ok, err)
	ok, err = s.RunInputDone(ctx, "q1", "w2", agent.InputCancelled, at(2*time.Hour))
	mustLose(t, "RunInputDone by a non-owner", ok, err)
	ok, err = s.RunInputDone(ctx, "q1", "w1", agent.InputCancelled, at(2*time.Hour))
	mustWin(t, "RunInputDone", ok, err)
	got := getInput(t, s, "q1")
	if got.Status != agent.InputAccepted || got.Content != nil {
		t.Fatalf("question after RunInputDone = %s with content %s; want accepted (the reply stands), content cleared", got.Status, got.Content)
	}
	run := get(t, s, "r1")
	if run.Status != agent.StatusRunning || run.LeaseOwner != "w1" || !run.LeaseExpires.Equal(at(2*time.Hour)) {
		t.Fatalf("run after RunInputDone = %s held by %q until %v", run.Status, run.LeaseOwner, run.LeaseExpires)
	}
	// A question nobody answered ends as the holder says.
	mustAwait(t, s, question("q2", "r1"), "w1")
	ok, err = s.RunInputDone(ctx, "q2", "w1", agent.InputExpired, at(2*time.Hour))
	mustWin(t, "RunInputDone of an unanswered question", ok, err)
	if got := getInput(t, s, "q2"); got.Status != agent.InputExpired {
		t.Fatalf("unanswered question ended %s, want expired", got.Status)
	}
	if list, err := s.InputList(ctx, "r1"); err != nil || len(list) != 2 || list[0].ID != "q1" || list[1].ID != "q2" {
		t.Fatalf("InputList(r1) = %v, %v; want q1, q2", list, err)
	}
}

func testInputCancelled(t *testing.T, s InputStore) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Hour))
	mustAwait(t, s, question("q1", "r1"), "w1")
	ok, err := s.RunFinish(ctx, "r1", "", agent.StatusCancelled, agent.ReasonCancelled, "")
	mustWin(t, "cancelling a run waiting for input", ok, err)
	if p, _ := s.InputPending(ctx, "r1"); p != nil {
		t.Fatalf("a cancelled run still has a pending question: %+v", p)
	}
	ok, err = s.RunInputDone(ctx, "q1", "w1", agent.InputCancelled, at(2*time.Hour))
	mustLose(t, "RunInputDone on a cancelled run", ok, err)
	if got := get(t, s, "r1"); got.Status != agent.StatusCancelled {
		t.Fatalf("run = %s after the holder ended its wait, want cancelled", got.Status)
	}
	if got := getInput(t, s, "q1"); got.Status != agent.InputCancelled {
		t.Fatalf("question = %s, want cancelled", got.Status)
	}
	// The holder still records the step it had in flight.
	if err := s.StepAppend(ctx, "w1", &agent.Step{RunID: "r1", Kind: agent.StepInput, Outcome: agent.OutcomeCancelled}); err != nil {
		t.Fatalf("the holder's step of a run cancelled while waiting: %v", err)
	}
}

func testInputStale(t *testing.T, s InputStore) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Hour))
	mustAwait(t, s, question("q1", "r1"), "w1")
	ok, err := s.RunRenewLease(ctx, "r1", "w1", at(2*time.Hour))
	mustWin(t, "renewing the lease of a run waiting for input", ok, err)
	if renewed, err := s.RunRenewLeases(ctx, []agent.Lease{{RunID: "r1", Owner: "w1"}}, at(2*time.Hour)); err != nil || len(renewed) != 1 {
		t.Fatalf("RunRenewLeases of a run waiting for input = %v, %v; want it renewed", renewed, err)
	}
	if err := s.StepAppend(ctx, "w1", &agent.Step{RunID: "r1", Kind: agent.StepLog, Text: "the server logs while it waits"}); err != nil {
		t.Fatalf("the holder's step while its run waits for input: %v", err)
	}
	if err := s.StepAppend(ctx, "w2", &agent.Step{RunID: "r1", Kind: agent.StepLog}); !errors.Is(err, agent.ErrLeaseLost) {
		t.Fatalf("another segment's step on a run waiting for input: %v, want ErrLeaseLost", err)
	}
	ok, err = s.RunRenewLease(ctx, "r1", "w2", at(3*time.Hour))
	mustLose(t, "renewing by another owner", ok, err)
	stale, err := s.RunsStale(ctx, at(3*time.Hour))
	if err != nil || len(stale) != 1 || stale[0].ID != "r1" {
		t.Fatalf("RunsStale = %v, %v; want r1, whose holder stopped renewing", stale, err)
	}
	ok, err = s.RunRequeueStale(ctx, "r1", at(3*time.Hour))
	mustWin(t, "requeueing a run whose holder died waiting", ok, err)
	if p, _ := s.InputPending(ctx, "r1"); p != nil {
		t.Fatalf("a requeued run still shows its dead holder's question: %+v", p)
	}
}
