package storetest

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

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
