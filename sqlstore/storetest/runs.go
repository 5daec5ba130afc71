package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

// ExerciseRuns runs the suite of agent.Store: the run row as the one
// definition of a run's state, its guarded transitions, the write fence and
// the steps. newStore returns a fresh, empty store for one test and arranges
// its cleanup. Every test runs in parallel with the others.
//
// A transition that loses (wrong status, wrong owner, lease not expired)
// must report false (or a nil run) with a nil error: losing a race is not a
// failure. Arguments no transition can accept (an empty owner, a
// non-terminal target for RunFinish) must not change the row; whether they
// also return an error is the implementation's choice.
//
// Times in the suite are whole milliseconds, so a store may keep them at
// microsecond precision.
func ExerciseRuns(t *testing.T, newStore func(t *testing.T) agent.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s agent.Store)
	}{
		{"RunGetOfAnUnknownRunIsNotFound", testRunGetUnknown},
		{"RunInsertStoresEveryField", testRunInsertRoundTrip},
		{"RunInsertDefaultsToQueuedAndNow", testRunInsertDefaults},
		{"RunInsertOfAnExistingIDFails", testRunInsertDuplicate},
		{"EveryStatusCanBeStored", testEveryStatusStored},
		{"CancelledIsTerminal", testCancelledIsTerminal},
		{"CompletedAndFailedAreTerminalToo", testCompletedAndFailedAreTerminal},
		{"ATerminalRunIsTerminalEvenIfItNamesALeaseOwner", testTerminalDespiteLease},
		{"ASecondCancelLoses", testSecondCancelLoses},
		{"ACancelRacingTheOwnersFinishHasOneWinner", testCancelRacesFinish},
		{"ASuspensionAfterACancelIsDiscarded", testSuspendAfterCancel},
		{"ACancelledQueuedRunIsNeverClaimed", testCancelledQueuedNeverClaimed},
		{"ClaimTakesTheOldestQueuedRun", testClaimOldest},
		{"ClaimWithNothingQueuedReturnsNil", testClaimNothing},
		{"ClaimKeepsTheFirstStartAndCountsAttempts", testClaimCountsAttempts},
		{"TwoConcurrentClaimersOfOneRunGiveItToExactlyOne", testConcurrentClaimOne},
		{"ConcurrentClaimersGetEachQueuedRunOnce", testConcurrentClaimMany},
		{"TheFenceIsStampedAndClearedOnlyByTheLeaseOwner", testFenceOwner},
		{"TheLeaseIsRenewedOnlyByItsOwner", testRenewLease},
		{"AnEmptyOwnerHoldsNothing", testEmptyOwner},
		{"CancelKeepsPendingEffect", testCancelKeepsFence},
		{"FinishByTheOwnerKeepsPendingEffect", testFinishKeepsFence},
		{"RequeueClearsPendingEffectAndLease", testRequeueClearsFence},
		{"RequeueRefusesANonIdempotentWriteInFlight", testRequeueRefusesNonIdempotent},
		{"SuspendNeedsTheLeaseOwnerAndReleasesTheLease", testSuspend},
		{"TwoConcurrentResumesHaveExactlyOneWinner", testConcurrentResumes},
		{"ResumeOfACancelledRunFailsAndItsSuspendedStateIsGone", testResumeCancelled},
		{"ResumeNeedsTheWaitingStatusItNames", testResumeFromStatus},
		{"RunFinishWithAnOwnerGuardFailsForANonOwner", testFinishOwnerGuard},
		{"RunFinishOnlyMovesToATerminalStatus", testFinishNonTerminal},
		{"StaleRunsAreRunningRunsWhoseLeaseExpired", testRunsStale},
		{"StaleRequeueAndFinishNeedAnExpiredLease", testStaleTransitions},
		{"ARenewedLeaseIsNoLongerStale", testRenewedNotStale},
		{"RunStatusesReadsManyRunsAndSkipsUnknownOnes", testRunStatuses},
		{"RunListIsNewestFirstAndFilters", testRunList},
		{"RunListPagesWithBefore", testRunListPaging},
		{"RunListDefaultsToDefaultRunListLimit", testRunListDefaultLimit},
		{"StepsComeBackWhole", testStepRoundTrip},
		{"StepsAppendedConcurrentlyGetDistinctConsecutiveSeqs", testStepsConcurrent},
		{"StepAppendToAnUnknownRunIsNotFound", testStepAppendUnknown},
		{"StepsMayBeAppendedToAFinishedRun", testStepAppendFinished},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newStore(t))
		})
	}
}

// t0 is the suite's epoch: whole seconds, far from the zero time.
var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func newRun(id string, created time.Time) *agent.Run {
	return &agent.Run{
		ID:        id,
		Owner:     "alice",
		Request:   json.RawMessage(`{"prompt":"hello ` + id + `"}`),
		CreatedAt: created,
	}
}

func insert(t *testing.T, s agent.Store, run *agent.Run) *agent.Run {
	t.Helper()
	if err := s.RunInsert(t.Context(), run); err != nil {
		t.Fatalf("RunInsert(%s): %v", run.ID, err)
	}
	return run
}

// insertRunning stores a run born running, held by owner until lease, as an
// interactive run is.
func insertRunning(t *testing.T, s agent.Store, id, owner string, lease time.Time) *agent.Run {
	t.Helper()
	r := newRun(id, t0)
	r.Status = agent.StatusRunning
	r.LeaseOwner = owner
	r.LeaseExpires = lease
	r.Attempts = 1
	r.StartedAt = t0
	return insert(t, s, r)
}

// insertWaiting stores a running run held by owner and suspends it to
// waiting_for_approval with state.
func insertWaiting(t *testing.T, s agent.Store, id, owner string, state []byte) {
	t.Helper()
	insertRunning(t, s, id, owner, at(time.Hour))
	ok, err := s.RunSuspend(t.Context(), id, owner, agent.StatusWaitingForApproval, state)
	mustWin(t, "RunSuspend", ok, err)
}

func get(t *testing.T, s agent.Store, id string) *agent.Run {
	t.Helper()
	r, err := s.RunGet(t.Context(), id)
	if err != nil {
		t.Fatalf("RunGet(%s): %v", id, err)
	}
	return r
}

func mustWin(t *testing.T, what string, ok bool, err error) {
	t.Helper()
	if err != nil || !ok {
		t.Fatalf("%s = %v, %v; want true, nil", what, ok, err)
	}
}

func mustLose(t *testing.T, what string, ok bool, err error) {
	t.Helper()
	if err != nil || ok {
		t.Fatalf("%s = %v, %v; want false, nil", what, ok, err)
	}
}

// mustRefuse is for arguments no transition accepts: it must not win; an
// error is allowed.
func mustRefuse(t *testing.T, what string, ok bool, _ error) {
	t.Helper()
	if ok {
		t.Fatalf("%s won; want it refused", what)
	}
}

// mustBe fails unless got equals want, naming the fields that differ.
func mustBe(t *testing.T, what string, got, want *agent.Run) {
	t.Helper()
	if d := runDiff(got, want); d != "" {
		t.Fatalf("%s: %s", what, d)
	}
}

func runDiff(got, want *agent.Run) string {
	if got == nil || want == nil {
		if got == want {
			return ""
		}
		return fmt.Sprintf("got run %v, want %v", got, want)
	}
	var d []string
	field := func(name string, g, w any, equal bool) {
		if !equal {
			d = append(d, fmt.Sprintf("%s = %v, want %v", name, g, w))
		}
	}
	field("ID", got.ID, want.ID, got.ID == want.ID)
	field("Owner", got.Owner, want.Owner, got.Owner == want.Owner)
	field("Request", string(got.Request), string(want.Request), jsonEqual(got.Request, want.Request))
	field("Status", got.Status, want.Status, got.Status == want.Status)
	field("Reason", got.Reason, want.Reason, got.Reason == want.Reason)
	field("Error", got.Error, want.Error, got.Error == want.Error)
	field("LeaseOwner", got.LeaseOwner, want.LeaseOwner, got.LeaseOwner == want.LeaseOwner)
	field("LeaseExpires", got.LeaseExpires, want.LeaseExpires, got.LeaseExpires.Equal(want.LeaseExpires))
	field("PendingEffect", got.PendingEffect, want.PendingEffect, got.PendingEffect == want.PendingEffect)
	field("Suspended", string(got.Suspended), string(want.Suspended), bytes.Equal(got.Suspended, want.Suspended))
	field("Attempts", got.Attempts, want.Attempts, got.Attempts == want.Attempts)
	field("CreatedAt", got.CreatedAt, want.CreatedAt, got.CreatedAt.Equal(want.CreatedAt))
	field("StartedAt", got.StartedAt, want.StartedAt, got.StartedAt.Equal(want.StartedAt))
	field("FinishedAt", got.FinishedAt, want.FinishedAt, got.FinishedAt.Equal(want.FinishedAt))
	return strings.Join(d, "; ")
}

// jsonEqual compares JSON by meaning, so a store may normalise it.
func jsonEqual(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(va, vb)
}

// race starts n calls of fn at once and returns the indexes of those that
// won, sorted. An error fails the test.
func race(t *testing.T, n int, fn func(i int) (bool, error)) []int {
	t.Helper()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []int
	)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			ok, err := fn(i)
			if err != nil {
				t.Errorf("racer %d: %v", i, err)
				return
			}
			if ok {
				mu.Lock()
				winners = append(winners, i)
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	slices.Sort(winners)
	return winners
}

const racers = 8

func testRunGetUnknown(t *testing.T, s agent.Store) {
	if _, err := s.RunGet(t.Context(), "nope"); !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("RunGet(unknown) = %v, want agent.ErrNotFound", err)
	}
}

func testRunInsertRoundTrip(t *testing.T, s agent.Store) {
	want := &agent.Run{
		ID:            "r1",
		Owner:         "alice",
		Request:       json.RawMessage(`{"prompt":"hi","model":"script","script":[{"say":"x"}]}`),
		Status:        agent.StatusRunning,
		LeaseOwner:    "worker:1",
		LeaseExpires:  at(15 * time.Minute),
		PendingEffect: agent.EffectIdempotentWrite,
		Suspended:     []byte(`{"transcript":[]}`),
		Attempts:      2,
		CreatedAt:     at(-time.Minute),
		StartedAt:     at(-30 * time.Second),
	}
	insert(t, s, want)
	mustBe(t, "RunGet after RunInsert", get(t, s, "r1"), want)

	done := &agent.Run{
		ID: "r2", Owner: "bob", Request: json.RawMessage(`{"prompt":"x"}`),
		Status: agent.StatusFailed, Reason: agent.ReasonModelFailed, Error: "model: status 500",
		PendingEffect: agent.EffectNonIdempotentWrite,
		CreatedAt:     at(0), StartedAt: at(time.Second), FinishedAt: at(2 * time.Second),
	}
	insert(t, s, done)
	mustBe(t, "RunGet of a finished run", get(t, s, "r2"), done)
}

func testRunInsertDefaults(t *testing.T, s agent.Store) {
	before := time.Now()
	r := &agent.Run{ID: "r1", Owner: "alice", Request: json.RawMessage(`{"prompt":"hi"}`)}
	insert(t, s, r)
	if r.Status != agent.StatusQueued {
		t.Fatalf("RunInsert left Status %q, want queued", r.Status)
	}
	if r.CreatedAt.Before(before.Add(-time.Second)) || r.CreatedAt.After(time.Now().Add(time.Second)) {
		t.Fatalf("RunInsert set CreatedAt %v, want about now", r.CreatedAt)
	}
	got := get(t, s, "r1")
	if got.Status != agent.StatusQueued || !got.CreatedAt.Equal(r.CreatedAt) || got.LeaseOwner != "" ||
		!got.LeaseExpires.IsZero() || got.PendingEffect != "" || got.Suspended != nil || got.Attempts != 0 ||
		!got.StartedAt.IsZero() || !got.FinishedAt.IsZero() {
		t.Fatalf("a fresh run reads %+v; want queued, created %v, nothing else set", got, r.CreatedAt)
	}
}

func testRunInsertDuplicate(t *testing.T, s agent.Store) {
	first := insert(t, s, newRun("r1", t0))
	second := newRun("r1", at(time.Second))
	second.Owner = "mallory"
	if err := s.RunInsert(t.Context(), second); err == nil {
		t.Fatal("RunInsert of an existing id succeeded")
	}
	mustBe(t, "the first run after a refused insert", get(t, s, "r1"), first)
}

func testEveryStatusStored(t *testing.T, s agent.Store) {
	for i, st := range []agent.Status{agent.StatusQueued, agent.StatusRunning, agent.StatusWaitingForApproval,
		agent.StatusWaitingForInput, agent.StatusCompleted, agent.StatusFailed, agent.StatusCancelled} {
		r := newRun(string(st), at(time.Duration(i)*time.Second))
		r.Status = st
		insert(t, s, r)
		mustBe(t, "run in status "+string(st), get(t, s, r.ID), r)
	}
}

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

func testClaimOldest(t *testing.T, s agent.Store) {
	ctx := t.Context()
	// Inserted out of order; "x" and "y" tie on created_at and go by id.
	for _, r := range []*agent.Run{newRun("b", at(2*time.Second)), newRun("y", at(3*time.Second)),
		newRun("a", at(time.Second)), newRun("x", at(3*time.Second))} {
		insert(t, s, r)
	}
	insertRunning(t, s, "busy", "w0", at(time.Minute)) // older, but not queued
	before := time.Now().Add(-time.Second)
	for i, want := range []string{"a", "b", "x", "y"} {
		owner := fmt.Sprintf("w%d", i+1)
		lease := at(time.Duration(i+1) * time.Minute)
		r, err := s.RunClaim(ctx, owner, lease)
		if err != nil || r == nil {
			t.Fatalf("claim %d = %v, %v; want run %s", i, r, err, want)
		}
		if r.ID != want {
			t.Fatalf("claim %d took %s, want %s (oldest queued first)", i, r.ID, want)
		}
		if r.Status != agent.StatusRunning || r.LeaseOwner != owner || !r.LeaseExpires.Equal(lease) ||
			r.Attempts != 1 || r.StartedAt.Before(before) || r.PendingEffect != "" {
			t.Fatalf("claimed run = %+v; want running, held by %s until %v, 1 attempt, started now", r, owner, lease)
		}
		mustBe(t, "RunGet of the claimed run", get(t, s, r.ID), r)
	}
}

func testClaimNothing(t *testing.T, s agent.Store) {
	r, err := s.RunClaim(t.Context(), "w1", at(time.Minute))
	if r != nil || err != nil {
		t.Fatalf("RunClaim on an empty store = %v, %v; want nil, nil", r, err)
	}
}

func testClaimCountsAttempts(t *testing.T, s agent.Store) {
	ctx := t.Context()
	insert(t, s, newRun("r1", t0))
	first, err := s.RunClaim(ctx, "w1", at(time.Minute))
	if err != nil || first == nil {
		t.Fatalf("RunClaim = %v, %v", first, err)
	}
	ok, err := s.RunRequeue(ctx, "r1", "w1")
	mustWin(t, "RunRequeue", ok, err)
	second, err := s.RunClaim(ctx, "w2", at(2*time.Minute))
	if err != nil || second == nil {
		t.Fatalf("second RunClaim = %v, %v", second, err)
	}
	if second.Attempts != 2 || !second.StartedAt.Equal(first.StartedAt) || second.LeaseOwner != "w2" {
		t.Fatalf("second claim: attempts %d, started %v, owner %q; want 2, %v (the first start), w2",
			second.Attempts, second.StartedAt, second.LeaseOwner, first.StartedAt)
	}
}

func testConcurrentClaimOne(t *testing.T, s agent.Store) {
	ctx := t.Context()
	insert(t, s, newRun("r1", t0))
	winners := race(t, racers, func(i int) (bool, error) {
		r, err := s.RunClaim(ctx, fmt.Sprintf("w%d", i), at(time.Minute))
		return r != nil, err
	})
	if len(winners) != 1 {
		t.Fatalf("%d concurrent claims of one run: %v won, want exactly one", racers, winners)
	}
	got := get(t, s, "r1")
	if want := fmt.Sprintf("w%d", winners[0]); got.LeaseOwner != want || got.Attempts != 1 {
		t.Fatalf("run held by %q after %d attempts; want %s after 1", got.LeaseOwner, got.Attempts, want)
	}
}

func testConcurrentClaimMany(t *testing.T, s agent.Store) {
	ctx := t.Context()
	const runs = 24
	for i := range runs {
		insert(t, s, newRun(fmt.Sprintf("r%02d", i), at(time.Duration(i)*time.Millisecond)))
	}
	var mu sync.Mutex
	claimed := map[string]string{}
	race(t, racers, func(i int) (bool, error) {
		owner := fmt.Sprintf("w%d", i)
		for {
			r, err := s.RunClaim(ctx, owner, at(time.Minute))
			if err != nil || r == nil {
				return false, err
			}
			mu.Lock()
			if prev, dup := claimed[r.ID]; dup {
				mu.Unlock()
				return false, fmt.Errorf("%s claimed by %s and %s", r.ID, prev, owner)
			}
			claimed[r.ID] = owner
			mu.Unlock()
		}
	})
	if len(claimed) != runs {
		t.Fatalf("%d of %d runs claimed", len(claimed), runs)
	}
	for id, owner := range claimed {
		if got := get(t, s, id); got.Status != agent.StatusRunning || got.LeaseOwner != owner || got.Attempts != 1 {
			t.Fatalf("%s: status %q, owner %q, attempts %d; want running, %s, 1", id, got.Status, got.LeaseOwner, got.Attempts, owner)
		}
	}
}

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
	if got.Status != agent.StatusCancelled || got.Reason != agent.ReasonCancelled || got.LeaseOwner != "" ||
		!got.LeaseExpires.IsZero() || got.FinishedAt.IsZero() {
		t.Fatalf("after a cancel: %+v; want cancelled, lease released, finished", got)
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

func testSuspend(t *testing.T, s agent.Store) {
	ctx := t.Context()
	want := insertRunning(t, s, "r1", "w1", at(time.Minute))
	state := []byte(`{"transcript":["hi"],"pending":{"tool":"write"}}`)
	ok, err := s.RunSuspend(ctx, "r1", "w2", agent.StatusWaitingForApproval, state)
	mustLose(t, "RunSuspend by a non-owner", ok, err)
	mustBe(t, "after a suspension by a non-owner", get(t, s, "r1"), want)
	ok, err = s.RunSuspend(ctx, "r1", "w1", agent.StatusWaitingForApproval, state)
	mustWin(t, "RunSuspend by the owner", ok, err)
	want.Status, want.Suspended, want.LeaseOwner, want.LeaseExpires = agent.StatusWaitingForApproval, state, "", time.Time{}
	mustBe(t, "a suspended run", get(t, s, "r1"), want)
	ok, err = s.RunSuspend(ctx, "r1", "w1", agent.StatusWaitingForInput, []byte(`{}`))
	mustLose(t, "RunSuspend of a waiting run", ok, err)
	ok, err = s.RunRenewLease(ctx, "r1", "w1", at(time.Hour))
	mustLose(t, "a renewal after the suspension released the lease", ok, err)
	stale, err := s.RunsStale(ctx, at(1000*time.Hour))
	if err != nil || len(stale) != 0 {
		t.Fatalf("RunsStale = %d runs, %v; a waiting run is never stale", len(stale), err)
	}
	// A suspension must name a waiting status.
	insertRunning(t, s, "r2", "w1", at(time.Minute))
	ok, err = s.RunSuspend(ctx, "r2", "w1", agent.StatusCompleted, state)
	mustRefuse(t, "RunSuspend to completed", ok, err)
	if got := get(t, s, "r2"); got.Status != agent.StatusRunning {
		t.Fatalf("a suspension to completed moved the run to %q", got.Status)
	}
}

func testConcurrentResumes(t *testing.T, s agent.Store) {
	ctx := t.Context()
	state := []byte(`{"approve":"delete_repo"}`)
	insertWaiting(t, s, "r1", "w1", state)
	var mu sync.Mutex
	var won *agent.Run
	winners := race(t, racers, func(i int) (bool, error) {
		r, err := s.RunResume(ctx, "r1", agent.StatusWaitingForApproval, fmt.Sprintf("resume:%d", i), at(time.Hour))
		if r != nil {
			mu.Lock()
			won = r
			mu.Unlock()
		}
		return r != nil, err
	})
	if len(winners) != 1 {
		t.Fatalf("%d concurrent approvals: %v resumed the run, want exactly one", racers, winners)
	}
	owner := fmt.Sprintf("resume:%d", winners[0])
	if won.Status != agent.StatusRunning || won.LeaseOwner != owner || !won.LeaseExpires.Equal(at(time.Hour)) ||
		!bytes.Equal(won.Suspended, state) {
		t.Fatalf("resumed run = %+v; want running, held by %s, with its resumable state %s", won, owner, state)
	}
	mustBe(t, "RunGet of the resumed run", get(t, s, "r1"), won)
}

func testResumeCancelled(t *testing.T, s agent.Store) {
	ctx := t.Context()
	insertWaiting(t, s, "r1", "w1", []byte(`{"s":1}`))
	ok, err := s.RunFinish(ctx, "r1", "", agent.StatusCancelled, agent.ReasonCancelled, "")
	mustWin(t, "cancel of a waiting run", ok, err)
	if got := get(t, s, "r1"); got.Suspended != nil {
		t.Fatalf("a cancel kept the resumable state %q", got.Suspended)
	}
	r, err := s.RunResume(ctx, "r1", agent.StatusWaitingForApproval, "resume:1", at(time.Hour))
	mustLose(t, "RunResume of a cancelled run", r != nil, err)
	if got := get(t, s, "r1"); got.Status != agent.StatusCancelled || got.LeaseOwner != "" {
		t.Fatalf("after a refused resume: status %q, lease owner %q", got.Status, got.LeaseOwner)
	}
}

func testResumeFromStatus(t *testing.T, s agent.Store) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(time.Minute))
	ok, err := s.RunSuspend(ctx, "r1", "w1", agent.StatusWaitingForInput, []byte(`{"ask":"name"}`))
	mustWin(t, "RunSuspend(waiting_for_input)", ok, err)
	r, err := s.RunResume(ctx, "r1", agent.StatusWaitingForApproval, "resume:1", at(time.Hour))
	mustLose(t, "an approval of a run waiting for input", r != nil, err)
	r, err = s.RunResume(ctx, "r1", agent.StatusWaitingForInput, "resume:1", at(time.Hour))
	mustWin(t, "RunResume(waiting_for_input)", r != nil, err)
	r, err = s.RunResume(ctx, "r1", agent.StatusWaitingForInput, "resume:2", at(time.Hour))
	mustLose(t, "a second RunResume", r != nil, err)
	r, err = s.RunResume(ctx, "r1", agent.StatusRunning, "resume:3", at(time.Hour))
	mustRefuse(t, "RunResume from running", r != nil, err)
	if got := get(t, s, "r1"); got.LeaseOwner != "resume:1" {
		t.Fatalf("the run is held by %q, want resume:1", got.LeaseOwner)
	}
	// Waiting, but with no resumable state to resume from.
	empty := newRun("r2", t0)
	empty.Status = agent.StatusWaitingForApproval
	insert(t, s, empty)
	r, err = s.RunResume(ctx, "r2", agent.StatusWaitingForApproval, "resume:1", at(time.Hour))
	mustLose(t, "RunResume of a waiting run without resumable state", r != nil, err)
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
		got.LeaseOwner != "" || !got.LeaseExpires.IsZero() || got.FinishedAt.Before(before) {
		t.Fatalf("finished run = %+v; want failed, model_failed, its error text, lease released, finished now", got)
	}
	// An owner-guarded finish of a run nobody holds (waiting) fails; the
	// unguarded one (a cancel) wins and drops the resumable state.
	insertWaiting(t, s, "r2", "w1", []byte(`{"s":1}`))
	ok, err = s.RunFinish(ctx, "r2", "w1", agent.StatusCompleted, agent.ReasonCompleted, "")
	mustLose(t, "owner-guarded RunFinish of a waiting run", ok, err)
	ok, err = s.RunFinish(ctx, "r2", "", agent.StatusFailed, agent.ReasonApprovalDenied, "")
	mustWin(t, "unguarded RunFinish of a waiting run", ok, err)
	if got := get(t, s, "r2"); got.Suspended != nil || got.Reason != agent.ReasonApprovalDenied {
		t.Fatalf("after an approval was denied: %+v; want no resumable state", got)
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

func staleIDs(t *testing.T, s agent.Store, now time.Time) []string {
	t.Helper()
	runs, err := s.RunsStale(t.Context(), now)
	if err != nil {
		t.Fatalf("RunsStale: %v", err)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	return ids
}

func testRunsStale(t *testing.T, s agent.Store) {
	ctx := t.Context()
	insertRunning(t, s, "a", "w1", at(10*time.Second))
	insertRunning(t, s, "b", "w2", at(20*time.Second))
	unleased := newRun("unleased", t0)
	unleased.Status = agent.StatusRunning
	insert(t, s, unleased)
	insertWaiting(t, s, "waiting", "w3", []byte(`{}`))
	insert(t, s, newRun("queued", t0))
	insertRunning(t, s, "done", "w4", at(time.Second))
	ok, err := s.RunFinish(ctx, "done", "", agent.StatusCancelled, agent.ReasonCancelled, "")
	mustWin(t, "cancel", ok, err)

	for _, c := range []struct {
		now  time.Time
		want []string
	}{
		{at(5 * time.Second), nil},
		{at(10 * time.Second), nil}, // expired means before now, strictly
		{at(10*time.Second + time.Millisecond), []string{"a"}},
		{at(time.Hour), []string{"a", "b"}},
	} {
		if got := staleIDs(t, s, c.now); !slices.Equal(got, c.want) {
			t.Errorf("RunsStale(t0+%v) = %v, want %v", c.now.Sub(t0), got, c.want)
		}
	}
	runs, err := s.RunsStale(ctx, at(time.Hour))
	if err != nil || len(runs) != 2 {
		t.Fatalf("RunsStale = %d runs, %v", len(runs), err)
	}
	for _, r := range runs {
		mustBe(t, "a stale run as listed", r, get(t, s, r.ID))
	}
}

func testStaleTransitions(t *testing.T, s agent.Store) {
	ctx := t.Context()
	lease := at(10 * time.Second)
	early, late := at(5*time.Second), at(11*time.Second)

	insertRunning(t, s, "a", "w1", lease)
	ok, err := s.RunSetPendingEffect(ctx, "a", "w1", agent.EffectIdempotentWrite, lease)
	mustWin(t, "stamp", ok, err)
	ok, err = s.RunRequeueStale(ctx, "a", early)
	mustLose(t, "RunRequeueStale before the lease expired", ok, err)
	ok, err = s.RunRequeueStale(ctx, "a", late)
	mustWin(t, "RunRequeueStale after the lease expired", ok, err)
	if got := get(t, s, "a"); got.Status != agent.StatusQueued || got.LeaseOwner != "" || !got.LeaseExpires.IsZero() || got.PendingEffect != "" {
		t.Fatalf("stale-requeued run = %+v; want queued, no lease, no fence", got)
	}
	ok, err = s.RunRenewLease(ctx, "a", "w1", at(time.Hour))
	mustLose(t, "the old owner's renewal after a stale requeue", ok, err)

	insertRunning(t, s, "b", "w1", lease)
	ok, err = s.RunFinishStale(ctx, "b", early, agent.StatusFailed, agent.ReasonNotRetryable, "")
	mustLose(t, "RunFinishStale before the lease expired", ok, err)
	ok, err = s.RunFinishStale(ctx, "b", late, agent.StatusFailed, agent.ReasonFailed, "lease expired")
	mustWin(t, "RunFinishStale after the lease expired", ok, err)
	if got := get(t, s, "b"); got.Status != agent.StatusFailed || got.Reason != agent.ReasonFailed ||
		got.Error != "lease expired" || got.LeaseOwner != "" || got.FinishedAt.IsZero() {
		t.Fatalf("stale-finished run = %+v", got)
	}
	ok, err = s.RunFinish(ctx, "b", "w1", agent.StatusCompleted, agent.ReasonCompleted, "")
	mustLose(t, "the old owner's finish after a stale finish", ok, err)

	// No lease deadline: never stale. Waiting: never stale.
	unleased := newRun("c", t0)
	unleased.Status = agent.StatusRunning
	insert(t, s, unleased)
	insertWaiting(t, s, "d", "w1", []byte(`{}`))
	for _, id := range []string{"c", "d"} {
		ok, err = s.RunRequeueStale(ctx, id, at(1000*time.Hour))
		mustLose(t, "RunRequeueStale of "+id, ok, err)
		ok, err = s.RunFinishStale(ctx, id, at(1000*time.Hour), agent.StatusFailed, agent.ReasonFailed, "")
		mustLose(t, "RunFinishStale of "+id, ok, err)
	}
}

func testRenewedNotStale(t *testing.T, s agent.Store) {
	ctx := t.Context()
	insertRunning(t, s, "r1", "w1", at(10*time.Second))
	// The reaper lists the run, then its owner renews before the reaper acts.
	if got := staleIDs(t, s, at(11*time.Second)); !slices.Equal(got, []string{"r1"}) {
		t.Fatalf("RunsStale = %v, want [r1]", got)
	}
	ok, err := s.RunRenewLease(ctx, "r1", "w1", at(time.Minute))
	mustWin(t, "a late renewal by the owner", ok, err)
	ok, err = s.RunRequeueStale(ctx, "r1", at(11*time.Second))
	mustLose(t, "RunRequeueStale of a renewed run", ok, err)
	ok, err = s.RunFinishStale(ctx, "r1", at(11*time.Second), agent.StatusFailed, agent.ReasonFailed, "")
	mustLose(t, "RunFinishStale of a renewed run", ok, err)
	if got := get(t, s, "r1"); got.Status != agent.StatusRunning || got.LeaseOwner != "w1" {
		t.Fatalf("renewed run = %+v; want running, held by w1", got)
	}
}

func testRunStatuses(t *testing.T, s agent.Store) {
	ctx := t.Context()
	got, err := s.RunStatuses(ctx, nil)
	if err != nil || len(got) != 0 {
		t.Fatalf("RunStatuses(nil) = %v, %v; want an empty map", got, err)
	}
	const known, unknown = 300, 900
	want := map[string]agent.Status{}
	var ids []string
	for i := range known {
		id := fmt.Sprintf("r%03d", i)
		insert(t, s, newRun(id, at(time.Duration(i)*time.Millisecond)))
		want[id] = agent.StatusQueued
		if i%3 == 0 {
			ok, err := s.RunFinish(ctx, id, "", agent.StatusCancelled, agent.ReasonCancelled, "")
			mustWin(t, "cancel", ok, err)
			want[id] = agent.StatusCancelled
		}
		ids = append(ids, id)
	}
	for i := range unknown {
		ids = append(ids, fmt.Sprintf("gone-%d", i))
	}
	ids = append(ids, "r000", "gone-0") // duplicates are harmless
	rand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	got, err = s.RunStatuses(ctx, ids)
	if err != nil {
		t.Fatalf("RunStatuses(%d ids): %v", len(ids), err)
	}
	if len(got) != known {
		t.Fatalf("RunStatuses returned %d runs, want the %d that exist", len(got), known)
	}
	for id, st := range want {
		if got[id] != st {
			t.Fatalf("RunStatuses[%s] = %q, want %q", id, got[id], st)
		}
	}
	got, err = s.RunStatuses(ctx, []string{"gone"})
	if err != nil || len(got) != 0 {
		t.Fatalf("RunStatuses(unknown) = %v, %v; want an empty map", got, err)
	}
}

func listIDs(t *testing.T, s agent.Store, f agent.RunFilter) []string {
	t.Helper()
	runs, err := s.RunList(t.Context(), f)
	if err != nil {
		t.Fatalf("RunList(%+v): %v", f, err)
	}
	ids := []string{}
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	return ids
}

func testRunList(t *testing.T, s agent.Store) {
	ctx := t.Context()
	if got := listIDs(t, s, agent.RunFilter{}); len(got) != 0 {
		t.Fatalf("RunList on an empty store = %v", got)
	}
	// r1 … r6, oldest first; bob owns the even ones; r2 and r5 are cancelled.
	for i := 1; i <= 6; i++ {
		r := newRun(fmt.Sprintf("r%d", i), at(time.Duration(i)*time.Second))
		if i%2 == 0 {
			r.Owner = "bob"
		}
		insert(t, s, r)
	}
	for _, id := range []string{"r2", "r5"} {
		ok, err := s.RunFinish(ctx, id, "", agent.StatusCancelled, agent.ReasonCancelled, "")
		mustWin(t, "cancel", ok, err)
	}
	for _, c := range []struct {
		f    agent.RunFilter
		want []string
	}{
		{agent.RunFilter{}, []string{"r6", "r5", "r4", "r3", "r2", "r1"}},
		{agent.RunFilter{Owner: "bob"}, []string{"r6", "r4", "r2"}},
		{agent.RunFilter{Status: agent.StatusCancelled}, []string{"r5", "r2"}},
		{agent.RunFilter{Owner: "alice", Status: agent.StatusQueued}, []string{"r3", "r1"}},
		{agent.RunFilter{Owner: "carol"}, []string{}},
		{agent.RunFilter{Limit: 2}, []string{"r6", "r5"}},
		{agent.RunFilter{Owner: "bob", Limit: 1}, []string{"r6"}},
	} {
		if got := listIDs(t, s, c.f); !slices.Equal(got, c.want) {
			t.Errorf("RunList(%+v) = %v, want %v", c.f, got, c.want)
		}
	}
	runs, err := s.RunList(ctx, agent.RunFilter{Limit: 1})
	if err != nil || len(runs) != 1 {
		t.Fatalf("RunList = %v, %v", runs, err)
	}
	mustBe(t, "a listed run", runs[0], get(t, s, "r6"))
}

func testRunListPaging(t *testing.T, s agent.Store) {
	ctx := t.Context()
	// Ties on created_at are ordered by id, descending, so pages neither
	// skip nor repeat a run.
	var all []string
	for i := range 9 {
		id := fmt.Sprintf("r%d", i)
		insert(t, s, newRun(id, at(time.Duration(i/3)*time.Second)))
		all = append(all, id)
	}
	slices.Reverse(all)
	var paged []string
	before := ""
	for range 10 {
		page := listIDs(t, s, agent.RunFilter{Limit: 2, Before: before})
		if len(page) == 0 {
			break
		}
		paged = append(paged, page...)
		before = page[len(page)-1]
	}
	if !slices.Equal(paged, all) {
		t.Fatalf("pages of 2 = %v, want %v", paged, all)
	}
	if got := listIDs(t, s, agent.RunFilter{Before: "r3", Owner: "alice"}); !slices.Equal(got, []string{"r2", "r1", "r0"}) {
		t.Fatalf("RunList(before r3) = %v, want [r2 r1 r0]", got)
	}
	if _, err := s.RunList(ctx, agent.RunFilter{Before: "gone"}); !errors.Is(err, agent.ErrNotFound) {
		t.Fatalf("RunList(before an unknown run) = %v, want agent.ErrNotFound", err)
	}
}

func testRunListDefaultLimit(t *testing.T, s agent.Store) {
	n := agent.DefaultRunListLimit + 5
	for i := range n {
		insert(t, s, newRun(fmt.Sprintf("r%04d", i), at(time.Duration(i)*time.Millisecond)))
	}
	got := listIDs(t, s, agent.RunFilter{})
	if len(got) != agent.DefaultRunListLimit || got[0] != fmt.Sprintf("r%04d", n-1) {
		t.Fatalf("RunList(zero filter) returned %d runs starting at %v; want the newest %d",
			len(got), got[:min(1, len(got))], agent.DefaultRunListLimit)
	}
}

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
