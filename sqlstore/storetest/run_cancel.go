package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/andonhq/andon/agent"
)

// CancelStore is what the cancel suite needs: runs, their task handles and
// the one-statement cancel.
type CancelStore interface {
	agent.Store
	agent.TaskStore
	agent.RunCanceller
}

// ExerciseRunCancel runs the suite of [agent.RunCanceller]. newStore
// returns a fresh, empty store for one test and arranges its cleanup.
func ExerciseRunCancel(t *testing.T, newStore func(t *testing.T) CancelStore) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s CancelStore)
	}{
		{"AnAdminCancelsAnyonesRunAsRunFinishWould", testRunCancelByAdmin},
		{"TheOwnerCancelsItsRun", testRunCancelByOwner},
		{"ACancelByANonOwnerIsRefusedAndChangesNothing", testRunCancelNotOwner},
		{"AnActorWithoutAnIDCancelsNothing", testRunCancelNobody},
		{"ACancelOfAnUnknownRunLosesWithoutAnError", testRunCancelUnknown},
		{"ACancelOfAFinishedRunLosesAndChangesNothing", testRunCancelFinished},
		{"ACancelOfARunWithATaskLosesAndChangesNothing", testRunCancelWithTask},
		{"ConcurrentCancelsOfOneRunHaveOneWinner", testRunCancelConcurrent},
		{"ACancelKeepsTheTraceOfItsSpan", testRunCancelTrace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newStore(t))
		})
	}
}

var (
	admin = agent.Actor{ID: "root", Admin: true}
	alice = agent.Actor{ID: "alice"} // newRun's owner
	bob   = agent.Actor{ID: "bob"}
)

// requireCancelledLikeRunFinish fails unless run id reads as its twin, a
// run inserted like it, does once RunFinish(cancelled) has cancelled it:
// every field but the id, the request and the time of the finish.
func requireCancelledLikeRunFinish(t *testing.T, s CancelStore, id, twin string) {
	t.Helper()
	ok, err := s.RunFinish(t.Context(), twin, "", agent.StatusCancelled, agent.ReasonCancelled, "")
	mustWin(t, "RunFinish(cancelled) of the twin", ok, err)
	got, want := get(t, s, id), get(t, s, twin)
	if got.FinishedAt.IsZero() {
		t.Fatal("the cancelled run has no finished_at")
	}
	want.ID, want.Request, want.FinishedAt = got.ID, got.Request, got.FinishedAt
	mustBe(t, "a run cancelled by RunCancel, against one cancelled by RunFinish", got, want)
}

func testRunCancelByAdmin(t *testing.T, s CancelStore) {
	ctx := t.Context()
	for _, id := range []string{"r1", "twin"} {
		insertRunning(t, s, id, "w1", at(time.Minute))
		ok, err := s.RunSetPendingEffect(ctx, id, "w1", agent.EffectNonIdempotentWrite, at(time.Minute))
		mustWin(t, "RunSetPendingEffect", ok, err)
	}
	won, _, err := s.RunCancel(ctx, "r1", admin, false)
	mustWin(t, "RunCancel by an admin", won, err)
	requireCancelledLikeRunFinish(t, s, "r1", "twin")
	requireNoWayOut(t, s, "r1", "w1")
}

func testRunCancelByOwner(t *testing.T, s CancelStore) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Minute))
	insertRunning(t, s, "twin", "w1", at(time.Minute))
	won, _, err := s.RunCancel(ctx, "r1", alice, false)
	mustWin(t, "RunCancel by the run's owner", won, err)
	requireCancelledLikeRunFinish(t, s, "r1", "twin")
}

func testRunCancelNotOwner(t *testing.T, s CancelStore) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Minute))
	want := get(t, s, "r1")
	for _, announce := range []bool{false, true} {
		won, announced, err := s.RunCancel(ctx, "r1", bob, announce)
		mustLose(t, "RunCancel by someone else", won || announced, err)
	}
	mustBe(t, "a run someone else tried to cancel", get(t, s, "r1"), want)
}

func testRunCancelNobody(t *testing.T, s CancelStore) {
	ctx := t.Context()
	if err := s.RunInsert(ctx, &agent.Run{ID: "r1", Request: []byte(`{}`)}); err != nil { // no owner either
		t.Fatal(err)
	}
	want := get(t, s, "r1")
	won, _, err := s.RunCancel(ctx, "r1", agent.Actor{}, false)
	mustLose(t, "RunCancel by an actor without an id of a run without an owner", won, err)
	mustBe(t, "the run", get(t, s, "r1"), want)
}

func testRunCancelUnknown(t *testing.T, s CancelStore) {
	won, announced, err := s.RunCancel(t.Context(), "nope", admin, true)
	mustLose(t, "RunCancel of an unknown run", won || announced, err)
}

func testRunCancelFinished(t *testing.T, s CancelStore) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Minute))
	ok, err := s.RunFinish(ctx, "r1", "w1", agent.StatusCompleted, agent.ReasonCompleted, "")
	mustWin(t, "RunFinish(completed)", ok, err)
	want := get(t, s, "r1")
	won, announced, err := s.RunCancel(ctx, "r1", admin, true)
	mustLose(t, "RunCancel of a completed run", won || announced, err)
	mustBe(t, "a completed run after a cancel", get(t, s, "r1"), want)
}

func testRunCancelWithTask(t *testing.T, s CancelStore) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Minute))
	ok, err := s.TaskRecord(ctx, "w1", task("r1", 1, 0, "t1"))
	mustWin(t, "TaskRecord", ok, err)
	want := get(t, s, "r1")
	won, announced, err := s.RunCancel(ctx, "r1", admin, true)
	mustLose(t, "RunCancel of a run with a task", won || announced, err)
	mustBe(t, "a run with a task after RunCancel", get(t, s, "r1"), want)
}

func testRunCancelConcurrent(t *testing.T, s CancelStore) {
	ctx := t.Context()
	const runs, each = 16, 4
	for i := range runs {
		insertRunning(t, s, fmt.Sprint("r", i), "w1", at(time.Minute))
	}
	var mu sync.Mutex
	wins := map[string]int{}
	var wg sync.WaitGroup
	for i := range runs * each {
		id := fmt.Sprint("r", i%runs)
		by := []agent.Actor{admin, alice}[i%2]
		wg.Go(func() {
			won, _, err := s.RunCancel(ctx, id, by, false)
			if err != nil {
				t.Error(err)
			}
			if won {
				mu.Lock()
				wins[id]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for i := range runs {
		id := fmt.Sprint("r", i)
		if wins[id] != 1 || get(t, s, id).Status != agent.StatusCancelled {
			t.Errorf("run %s: %d of %d concurrent cancels won, status %s; want exactly one, cancelled", id, wins[id], each, get(t, s, id).Status)
		}
	}
}

// testRunCancelTrace: the traceparent a run was inserted with comes back;
// a cancel made within a span (RunCancel, and RunFinish without an owner)
// keeps that span's traceparent on the row, and one made without a span
// leaves it empty, so that the worker that carries the cancel out can
// link to it.
func testRunCancelTrace(t *testing.T, s CancelStore) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c},
		SpanID:     trace.SpanID{0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31},
		TraceFlags: trace.FlagsSampled,
	})
	traced := trace.ContextWithSpanContext(t.Context(), sc)
	const want = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	if got := agent.TraceParent(traced); got != want {
		t.Fatalf("agent.TraceParent = %q, want %q", got, want)
	}
	for _, id := range []string{"byCancel", "byFinish", "untraced"} {
		r := newRun(id, t0)
		r.Status, r.LeaseOwner, r.LeaseExpires, r.Attempts = agent.StatusRunning, "w1", at(time.Minute), 1
		r.Trace = "00-11111111111111111111111111111111-2222222222222222-01"
		insert(t, s, r)
	}
	won, _, err := s.RunCancel(traced, "byCancel", admin, false)
	mustWin(t, "RunCancel within a span", won, err)
	won, err = s.RunFinish(traced, "byFinish", "", agent.StatusCancelled, agent.ReasonCancelled, "")
	mustWin(t, "RunFinish(cancelled) within a span", won, err)
	won, _, err = s.RunCancel(context.WithoutCancel(t.Context()), "untraced", admin, false)
	mustWin(t, "RunCancel without a span", won, err)
	for id, wantCancel := range map[string]string{"byCancel": want, "byFinish": want, "untraced": ""} {
		got := get(t, s, id)
		if got.Trace != "00-11111111111111111111111111111111-2222222222222222-01" {
			t.Errorf("run %s: Trace = %q, want the one it was inserted with", id, got.Trace)
		}
		if got.CancelTrace != wantCancel {
			t.Errorf("run %s: CancelTrace = %q, want %q", id, got.CancelTrace, wantCancel)
		}
	}
}
