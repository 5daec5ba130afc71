package storetest

import (
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

func testFenceOwner(t *testing.T, s agent.Store) {
	ctx := t.Context()
	want := insertRunning(t, s, "r1", "w1", at(time.Minute))
	ok, err := s.RunSetPendingEffect(ctx, "r1", "w2", agent.EffectNonIdempotentWrite, at(2*time.Minute))
	mustLose(t, "a stamp by a non-owner", ok, err)
	mustBe(t, "after a stamp by a non-owner", get(t, s, "r1"), want)

	ok, err = s.RunSetPendingEffect(ctx, "r1", "w1", agent.EffectNonIdempotentWrite, at(2*time.Minute))
	mustWin(t, "a stamp by the owner", ok, err)
	want.PendingEffect, want.LeaseExpires = agent.EffectNonIdempotentWrite, at(2*time.Minute)
	mustBe(t, "after a stamp by the owner (fence set, lease renewed)", get(t, s, "r1"), want)

	ok, err = s.RunSetPendingEffect(ctx, "r1", "w2", "", at(3*time.Minute))
	mustLose(t, "a clear by a non-owner", ok, err)
	mustBe(t, "after a clear by a non-owner", get(t, s, "r1"), want)

	ok, err = s.RunSetPendingEffect(ctx, "r1", "w1", "", at(3*time.Minute))
	mustWin(t, "a clear by the owner", ok, err)
	want.PendingEffect, want.LeaseExpires = "", at(3*time.Minute)
	mustBe(t, "after a clear by the owner", get(t, s, "r1"), want)

	insert(t, s, newRun("queued", t0))
	ok, err = s.RunSetPendingEffect(ctx, "queued", "w1", agent.EffectNonIdempotentWrite, at(time.Minute))
	mustLose(t, "a stamp on a queued run", ok, err)
}

func testRenewLease(t *testing.T, s agent.Store) {
	ctx := t.Context()
	want := insertRunning(t, s, "r1", "w1", at(time.Minute))
	ok, err := s.RunRenewLease(ctx, "r1", "w2", at(2*time.Minute))
	mustLose(t, "a renewal by a non-owner", ok, err)
	mustBe(t, "after a renewal by a non-owner", get(t, s, "r1"), want)
	ok, err = s.RunRenewLease(ctx, "r1", "w1", at(2*time.Minute))
	mustWin(t, "a renewal by the owner", ok, err)
	// A renewal that changes nothing still reports the lease held: "no row
	// changed" must not be misread as a lost lease.
	ok, err = s.RunRenewLease(ctx, "r1", "w1", at(2*time.Minute))
	mustWin(t, "a renewal to the same deadline", ok, err)
	want.LeaseExpires = at(2 * time.Minute)
	mustBe(t, "after renewals by the owner", get(t, s, "r1"), want)

	insert(t, s, newRun("queued", t0))
	ok, err = s.RunRenewLease(ctx, "queued", "w1", at(time.Minute))
	mustLose(t, "a renewal of a queued run", ok, err)
	ok, err = s.RunRenewLease(ctx, "unknown", "w1", at(time.Minute))
	mustLose(t, "a renewal of an unknown run", ok, err)
}

func testEmptyOwner(t *testing.T, s agent.Store) {
	ctx := t.Context()
	// A running run that nobody holds: a guard on an empty owner must not
	// match its empty lease owner.
	r := newRun("r1", t0)
	r.Status = agent.StatusRunning
	want := insert(t, s, r)
	ok, err := s.RunRenewLease(ctx, "r1", "", at(time.Minute))
	mustRefuse(t, "RunRenewLease with an empty owner", ok, err)
	ok, err = s.RunSetPendingEffect(ctx, "r1", "", agent.EffectNonIdempotentWrite, at(time.Minute))
	mustRefuse(t, "RunSetPendingEffect with an empty owner", ok, err)
	ok, err = s.RunSuspend(ctx, "r1", "", agent.StatusWaitingForApproval, []byte(`{}`))
	mustRefuse(t, "RunSuspend with an empty owner", ok, err)
	ok, err = s.RunRequeue(ctx, "r1", "")
	mustRefuse(t, "RunRequeue with an empty owner", ok, err)
	mustBe(t, "after transitions with an empty owner", get(t, s, "r1"), want)

	queued := insert(t, s, newRun("q1", t0))
	claimed, err := s.RunClaim(ctx, "", at(time.Minute))
	mustRefuse(t, "RunClaim with an empty owner", claimed != nil, err)
	mustBe(t, "a queued run after a claim with an empty owner", get(t, s, "q1"), queued)
}

func testCancelKeepsFence(t *testing.T, s agent.Store) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Minute))
	ok, err := s.RunSetPendingEffect(ctx, "r1", "w1", agent.EffectNonIdempotentWrite, at(time.Minute))
	mustWin(t, "stamp", ok, err)
	ok, err = s.RunFinish(ctx, "r1", "", agent.StatusCancelled, agent.ReasonCancelled, "")
	mustWin(t, "cancel", ok, err)
	got := get(t, s, "r1")
	if got.PendingEffect != agent.EffectNonIdempotentWrite || agent.MayRetry(got.PendingEffect) {
		t.Fatalf("a cancel left the fence %q; want it stamped %q", got.PendingEffect, agent.EffectNonIdempotentWrite)
	}
	if got.Status != agent.StatusCancelled || got.Reason != agent.ReasonCancelled || got.LeaseOwner != "w1" ||
		!got.LeaseExpires.IsZero() || got.FinishedAt.IsZero() {
		t.Fatalf("after a cancel: %+v; want cancelled, lease released (its owner named), finished", got)
	}
	// The owner's clear, arriving after the cancel, matches nothing.
	ok, err = s.RunSetPendingEffect(ctx, "r1", "w1", "", at(2*time.Minute))
	mustLose(t, "the owner's clear after a cancel", ok, err)
	if got := get(t, s, "r1"); got.PendingEffect != agent.EffectNonIdempotentWrite {
		t.Fatalf("a clear after the cancel changed the fence to %q", got.PendingEffect)
	}
}

func testFinishKeepsFence(t *testing.T, s agent.Store) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Minute))
	ok, err := s.RunSetPendingEffect(ctx, "r1", "w1", agent.EffectIdempotentWrite, at(time.Minute))
	mustWin(t, "stamp", ok, err)
	ok, err = s.RunFinish(ctx, "r1", "w1", agent.StatusFailed, agent.ReasonFailed, "tool failed")
	mustWin(t, "RunFinish by the owner", ok, err)
	if got := get(t, s, "r1"); got.PendingEffect != agent.EffectIdempotentWrite {
		t.Fatalf("RunFinish changed the fence to %q", got.PendingEffect)
	}
}

func testRequeueClearsFence(t *testing.T, s agent.Store) {
	ctx := t.Context()
	insert(t, s, newRun("r1", t0))
	claimed, err := s.RunClaim(ctx, "w1", at(time.Minute))
	if err != nil || claimed == nil {
		t.Fatalf("RunClaim = %v, %v", claimed, err)
	}
	ok, err := s.RunSetPendingEffect(ctx, "r1", "w1", agent.EffectIdempotentWrite, at(time.Minute))
	mustWin(t, "stamp", ok, err)
	ok, err = s.RunRequeue(ctx, "r1", "w2")
	mustLose(t, "RunRequeue by a non-owner", ok, err)
	ok, err = s.RunRequeue(ctx, "r1", "w1")
	mustWin(t, "RunRequeue by the owner", ok, err)
	want := claimed
	want.Status, want.LeaseOwner, want.LeaseExpires, want.PendingEffect = agent.StatusQueued, "", time.Time{}, ""
	mustBe(t, "a requeued run", get(t, s, "r1"), want)
	ok, err = s.RunRequeue(ctx, "r1", "w1")
	mustLose(t, "a second RunRequeue", ok, err)
	again, err := s.RunClaim(ctx, "w3", at(2*time.Minute))
	if err != nil || again == nil || again.ID != "r1" || again.PendingEffect != "" {
		t.Fatalf("claim after requeue = %+v, %v; want r1 with no fence", again, err)
	}
}

func testRequeueRefusesNonIdempotent(t *testing.T, s agent.Store) {
	ctx := t.Context()
	want := insertRunning(t, s, "r1", "w1", at(time.Minute))
	ok, err := s.RunSetPendingEffect(ctx, "r1", "w1", agent.EffectNonIdempotentWrite, at(time.Minute))
	mustWin(t, "stamp", ok, err)
	want.PendingEffect = agent.EffectNonIdempotentWrite
	ok, err = s.RunRequeue(ctx, "r1", "w1")
	mustLose(t, "RunRequeue of a run mid non-idempotent write", ok, err)
	ok, err = s.RunRequeueStale(ctx, "r1", at(time.Hour))
	mustLose(t, "RunRequeueStale of a run mid non-idempotent write", ok, err)
	mustBe(t, "a run mid non-idempotent write after requeues", get(t, s, "r1"), want)
	// What the reaper does instead: dead-letter it, fence kept.
	ok, err = s.RunFinishStale(ctx, "r1", at(time.Hour), agent.StatusFailed, agent.ReasonNotRetryable, "")
	mustWin(t, "RunFinishStale of a run mid non-idempotent write", ok, err)
	if got := get(t, s, "r1"); got.Status != agent.StatusFailed || got.Reason != agent.ReasonNotRetryable ||
		got.PendingEffect != agent.EffectNonIdempotentWrite {
		t.Fatalf("dead-lettered run: %+v", got)
	}
}
