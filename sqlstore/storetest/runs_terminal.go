package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

// requireNoWayOut tries every transition on a terminal run held (before it
// finished) by owner, and fails if any changes it.
func requireNoWayOut(t *testing.T, s agent.Store, id, owner string) {
	t.Helper()
	ctx := t.Context()
	want := get(t, s, id)
	far := at(1000 * time.Hour)
	ok, err := s.RunFinish(ctx, id, "", agent.StatusCancelled, agent.ReasonCancelled, "")
	mustLose(t, "RunFinish(cancelled) of a terminal run", ok, err)
	ok, err = s.RunFinish(ctx, id, "", agent.StatusCompleted, agent.ReasonCompleted, "")
	mustLose(t, "RunFinish(completed) of a terminal run", ok, err)
	ok, err = s.RunFinish(ctx, id, owner, agent.StatusFailed, agent.ReasonFailed, "x")
	mustLose(t, "owner-guarded RunFinish of a terminal run", ok, err)
	ok, err = s.RunRenewLease(ctx, id, owner, far)
	mustLose(t, "RunRenewLease of a terminal run", ok, err)
	ok, err = s.RunSetPendingEffect(ctx, id, owner, "", far)
	mustLose(t, "RunSetPendingEffect of a terminal run", ok, err)
	ok, err = s.RunSuspend(ctx, id, owner, agent.StatusWaitingForApproval, []byte(`{}`))
	mustLose(t, "RunSuspend of a terminal run", ok, err)
	for _, from := range []agent.Status{agent.StatusWaitingForApproval, agent.StatusWaitingForInput} {
		r, err := s.RunResume(ctx, id, from, "resume:1", far)
		mustLose(t, "RunResume("+string(from)+") of a terminal run", r != nil, err)
	}
	ok, err = s.RunRequeue(ctx, id, owner)
	mustLose(t, "RunRequeue of a terminal run", ok, err)
	ok, err = s.RunRequeueStale(ctx, id, far)
	mustLose(t, "RunRequeueStale of a terminal run", ok, err)
	ok, err = s.RunFinishStale(ctx, id, far, agent.StatusFailed, agent.ReasonNotRetryable, "")
	mustLose(t, "RunFinishStale of a terminal run", ok, err)
	r, err := s.RunClaim(ctx, "worker:9", far)
	mustLose(t, "RunClaim with only a terminal run", r != nil, err)
	stale, err := s.RunsStale(ctx, far)
	if err != nil || len(stale) != 0 {
		t.Fatalf("RunsStale lists %d runs, %v; a terminal run is never stale", len(stale), err)
	}
	mustBe(t, "a terminal run after every transition was tried", get(t, s, id), want)
}

func testCancelledIsTerminal(t *testing.T, s agent.Store) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Minute))
	ok, err := s.RunSetPendingEffect(ctx, "r1", "w1", agent.EffectIdempotentWrite, at(time.Minute))
	mustWin(t, "RunSetPendingEffect", ok, err)
	ok, err = s.RunFinish(ctx, "r1", "", agent.StatusCancelled, agent.ReasonCancelled, "")
	mustWin(t, "cancel", ok, err)
	requireNoWayOut(t, s, "r1", "w1")
}

func testCompletedAndFailedAreTerminal(t *testing.T, s agent.Store) {
	ctx := t.Context()
	for _, to := range []agent.Status{agent.StatusCompleted, agent.StatusFailed} {
		id := string(to)
		insertRunning(t, s, id, "w1", at(time.Minute))
		ok, err := s.RunFinish(ctx, id, "w1", to, agent.ReasonCompleted, "")
		mustWin(t, "RunFinish("+id+")", ok, err)
		requireNoWayOut(t, s, id, "w1")
	}
}

// The status alone makes a run terminal: a terminal row that still names a
// lease owner (as a store that forgot to release it would leave) is just as
// closed to that owner.
func testTerminalDespiteLease(t *testing.T, s agent.Store) {
	for _, st := range []agent.Status{agent.StatusCompleted, agent.StatusFailed, agent.StatusCancelled} {
		r := newRun(string(st), t0)
		r.Status, r.LeaseOwner, r.LeaseExpires = st, "w1", at(time.Minute)
		insert(t, s, r)
		requireNoWayOut(t, s, r.ID, "w1")
	}
}

func testSecondCancelLoses(t *testing.T, s agent.Store) {
	ctx := t.Context()
	for i, st := range []agent.Status{agent.StatusQueued, agent.StatusRunning, agent.StatusWaitingForApproval} {
		id := fmt.Sprintf("r%d", i)
		switch st {
		case agent.StatusQueued:
			insert(t, s, newRun(id, t0))
		case agent.StatusRunning:
			insertRunning(t, s, id, "w1", at(time.Minute))
		default:
			insertWaiting(t, s, id, "w1", []byte(`{"s":1}`))
		}
		winners := race(t, racers, func(int) (bool, error) {
			return s.RunFinish(ctx, id, "", agent.StatusCancelled, agent.ReasonCancelled, "")
		})
		if len(winners) != 1 {
			t.Fatalf("%d concurrent cancels of a %s run: %d won, want exactly 1", racers, st, len(winners))
		}
		if got := get(t, s, id); got.Status != agent.StatusCancelled || got.Reason != agent.ReasonCancelled || got.FinishedAt.IsZero() {
			t.Fatalf("after the cancel race: status %q, reason %q, finished %v", got.Status, got.Reason, got.FinishedAt)
		}
	}
}

func testCancelRacesFinish(t *testing.T, s agent.Store) {
	ctx := t.Context()
	for n := range 10 {
		id := fmt.Sprintf("r%d", n)
		insertRunning(t, s, id, "w1", at(time.Minute))
		winners := race(t, 2, func(i int) (bool, error) {
			if i == 0 {
				return s.RunFinish(ctx, id, "", agent.StatusCancelled, agent.ReasonCancelled, "")
			}
			return s.RunFinish(ctx, id, "w1", agent.StatusCompleted, agent.ReasonCompleted, "")
		})
		if len(winners) != 1 {
			t.Fatalf("cancel racing completion: %v won, want exactly one", winners)
		}
		want := agent.StatusCancelled
		if winners[0] == 1 {
			want = agent.StatusCompleted
		}
		if got := get(t, s, id).Status; got != want {
			t.Fatalf("the winner set %q but the run reads %q", want, got)
		}
	}
}

func testSuspendAfterCancel(t *testing.T, s agent.Store) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Minute))
	ok, err := s.RunFinish(ctx, "r1", "", agent.StatusCancelled, agent.ReasonCancelled, "")
	mustWin(t, "cancel", ok, err)
	ok, err = s.RunSuspend(ctx, "r1", "w1", agent.StatusWaitingForApproval, []byte(`{"late":true}`))
	mustLose(t, "RunSuspend after a cancel", ok, err)
	if got := get(t, s, "r1"); got.Status != agent.StatusCancelled || got.Suspended != nil {
		t.Fatalf("after a late suspension: status %q, suspended %q; want cancelled and no state", got.Status, got.Suspended)
	}
}

func testCancelledQueuedNeverClaimed(t *testing.T, s agent.Store) {
	ctx := t.Context()
	older := insert(t, s, newRun("older", t0))
	insert(t, s, newRun("newer", at(time.Second)))
	ok, err := s.RunFinish(ctx, "older", "", agent.StatusCancelled, agent.ReasonCancelled, "")
	mustWin(t, "cancel of a queued run", ok, err)
	r, err := s.RunClaim(ctx, "w1", at(time.Minute))
	if err != nil || r == nil || r.ID != "newer" {
		t.Fatalf("RunClaim = %v, %v; want the newer run, the older is cancelled", r, err)
	}
	if r, err := s.RunClaim(ctx, "w2", at(time.Minute)); r != nil || err != nil {
		t.Fatalf("RunClaim = %v, %v; want nil: only a cancelled run is left", r, err)
	}
	got := get(t, s, "older")
	if got.Status != agent.StatusCancelled || got.Attempts != 0 || !got.StartedAt.IsZero() || got.LeaseOwner != "" {
		t.Fatalf("the cancelled queued run was touched: %+v (inserted as %+v)", got, older)
	}
}

func testFinishOwnerGuard(t *testing.T, s agent.Store) {
	ctx := t.Context()
	want := insertRunning(t, s, "r1", "w1", at(time.Minute))
	ok, err := s.RunFinish(ctx, "r1", "w2", agent.StatusCompleted, agent.ReasonCompleted, "")
	mustLose(t, "RunFinish by a non-owner", ok, err)
	mustBe(t, "after a finish by a non-owner", get(t, s, "r1"), want)
	before := time.Now().Add(-time.Second)
	ok, err = s.RunFinish(ctx, "r1", "w1", agent.StatusFailed, agent.ReasonModelFailed, "model: status 502")
	mustWin(t, "RunFinish by the owner", ok, err)
	got := get(t, s, "r1")
	if got.Status != agent.StatusFailed || got.Reason != agent.ReasonModelFailed || got.Error != "model: status 502" ||
		got.LeaseOwner != "w1" || !got.LeaseExpires.IsZero() || got.FinishedAt.Before(before) {
		t.Fatalf("finished run = %+v; want failed, model_failed, its error text, lease released (its owner named), finished now", got)
	}
	// An owner-guarded finish of a run nobody holds (waiting) fails; the
	// unguarded one (a cancel) wins and drops the resumable state.
	insertWaiting(t, s, "r2", "w1", []byte(`{"s":1}`))
	ok, err = s.RunFinish(ctx, "r2", "w1", agent.StatusCompleted, agent.ReasonCompleted, "")
	mustLose(t, "owner-guarded RunFinish of a waiting run", ok, err)
	ok, err = s.RunFinish(ctx, "r2", "", agent.StatusFailed, agent.ReasonFailed, "")
	mustWin(t, "unguarded RunFinish of a waiting run", ok, err)
	if got := get(t, s, "r2"); got.Suspended != nil || got.Reason != agent.ReasonFailed {
		t.Fatalf("after an unguarded finish of a waiting run: %+v; want no resumable state", got)
	}
}

func testFinishNonTerminal(t *testing.T, s agent.Store) {
	ctx := t.Context()
	want := insertRunning(t, s, "r1", "w1", at(time.Minute))
	for _, to := range []agent.Status{agent.StatusQueued, agent.StatusRunning, agent.StatusWaitingForApproval} {
		ok, err := s.RunFinish(ctx, "r1", "", to, agent.ReasonCompleted, "")
		mustRefuse(t, "RunFinish to "+string(to), ok, err)
		ok, err = s.RunFinishStale(ctx, "r1", at(time.Hour), to, agent.ReasonCompleted, "")
		mustRefuse(t, "RunFinishStale to "+string(to), ok, err)
	}
	mustBe(t, "after finishes to non-terminal statuses", get(t, s, "r1"), want)
}
