package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

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
