package storetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

// ExerciseRuns runs the suite of agent.Store: the run row as the one
// definition of a run's state, its guarded transitions, the write fence, the
// steps and the decisions on tool calls. newStore returns a fresh, empty
// store for one test and arranges its cleanup. Every test runs in parallel
// with the others.
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
		{"ClaimIDTakesThatQueuedRunOnly", testClaimID},
		{"ClaimIDOfARunNotQueuedReturnsNil", testClaimIDNotQueued},
		{"ConcurrentClaimIDOfOneRunGivesItToExactlyOne", testConcurrentClaimID},
		{"TheFenceIsStampedAndClearedOnlyByTheLeaseOwner", testFenceOwner},
		{"TheLeaseIsRenewedOnlyByItsOwner", testRenewLease},
		{"ManyLeasesAreRenewedAtOnceEachOnlyByItsOwner", testRenewLeases},
		{"AnyNumberOfLeasesIsRenewedAtOnce", testRenewManyLeases},
		{"AnEmptyOwnerHoldsNothing", testEmptyOwner},
		{"CancelKeepsPendingEffect", testCancelKeepsFence},
		{"FinishByTheOwnerKeepsPendingEffect", testFinishKeepsFence},
		{"RequeueClearsPendingEffectAndLease", testRequeueClearsFence},
		{"RequeueRefusesANonIdempotentWriteInFlight", testRequeueRefusesNonIdempotent},
		{"SuspendNeedsTheLeaseOwnerAndReleasesTheLease", testSuspend},
		{"TwoConcurrentResumesHaveExactlyOneWinner", testConcurrentResumes},
		{"ResumeOfACancelledRunFailsAndItsSuspendedStateIsGone", testResumeCancelled},
		{"ResumeNeedsTheWaitingStatusItNames", testResumeFromStatus},
		{"ADecisionComesBackWithTheCallItNamesWhoAndWhen", testApprovalRoundTrip},
		{"ADecisionIsRecordedOnlyByTheLeaseOwnerOfARunningRun", testApprovalNeedsTheLease},
		{"ACallIsDecidedOnce", testApprovalOncePerCall},
		{"AnApprovalForARedefinedToolIsReplaced", testApprovalForARedefinedTool},
		{"RunFinishWithAnOwnerGuardFailsForANonOwner", testFinishOwnerGuard},
		{"RunFinishOnlyMovesToATerminalStatus", testFinishNonTerminal},
		{"StaleRunsAreRunningRunsWhoseLeaseExpired", testRunsStale},
		{"ARunWithAHomeIsItsHomesAlone", testRunWithAHome},
		{"StaleRequeueAndFinishNeedAnExpiredLease", testStaleTransitions},
		{"ARenewedLeaseIsNoLongerStale", testRenewedNotStale},
		{"RunStatusesReadsManyRunsAndSkipsUnknownOnes", testRunStatuses},
		{"RunListIsNewestFirstAndFilters", testRunList},
		{"RunListPagesWithBefore", testRunListPaging},
		{"RunListDefaultsToDefaultRunListLimit", testRunListDefaultLimit},
		{"StepsComeBackWhole", testStepRoundTrip},
		{"StepsAppendedConcurrentlyGetDistinctConsecutiveSeqs", testStepsConcurrent},
		{"StepAppendToAnUnknownRunIsNotFound", testStepAppendUnknown},
		{"StepsOfACancelledRunComeOnlyFromTheSegmentThatHeldIt", testStepAppendCancelled},
		{"ASegmentWithoutTheLeaseAppendsNoStep", testStepAppendNeedsTheLease},
		{"AToolStepsRecordClearsTheFenceUnlessTheRunWasCancelled", testStepRecordClearsFence},
		{"TheLastStepsRecordSettlesTheRun", testStepRecordFinishes},
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
