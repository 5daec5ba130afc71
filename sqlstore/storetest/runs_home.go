package storetest

import (
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

// A run with a home (agent.Runtime.Call) is its home's alone: no claim of
// the queue takes it, a requeue refuses it, and a decision's hand-back
// (RunHandHome) leaves it queued for its home's RunClaimID, with a pickup
// deadline after which the reaper's queries find it and finish it.
func testRunWithAHome(t *testing.T, s agent.Store) {
	ctx := t.Context()
	r := newRun("homed", t0)
	r.Status, r.LeaseOwner, r.LeaseExpires, r.Attempts, r.StartedAt, r.Home = agent.StatusRunning, "call:gw:1", at(time.Hour), 1, t0, "gw"
	insert(t, s, r)
	if got := get(t, s, "homed"); got.Home != "gw" {
		t.Fatalf("Home = %q, want gw", got.Home)
	}
	ok, err := s.RunRequeue(ctx, "homed", "call:gw:1")
	mustLose(t, "RunRequeue of a run with a home", ok, err)
	ok, err = s.RunHandHome(ctx, "homed", "someone-else", at(time.Minute))
	mustLose(t, "RunHandHome by a non-owner", ok, err)
	ok, err = s.RunHandHome(ctx, "homed", "call:gw:1", at(time.Minute))
	mustWin(t, "RunHandHome", ok, err)
	if got := get(t, s, "homed"); got.Status != agent.StatusQueued || got.LeaseOwner != "" || !got.LeaseExpires.Equal(at(time.Minute)) {
		t.Fatalf("handed home: %s, owner %q, lease %v; want queued, no owner, the pickup deadline", got.Status, got.LeaseOwner, got.LeaseExpires)
	}
	if claimed, err := s.RunClaim(ctx, "worker:w:1", at(time.Hour)); err != nil || claimed != nil {
		t.Fatalf("RunClaim = %v, %v; want no run: the queued run is its home's", claimed, err)
	}
	stale, err := s.RunsStale(ctx, at(30*time.Second))
	if err != nil || len(stale) != 0 {
		t.Fatalf("RunsStale before the pickup deadline = %v, %v; want none", stale, err)
	}
	stale, err = s.RunsStale(ctx, at(2*time.Minute))
	if err != nil || len(stale) != 1 || stale[0].ID != "homed" {
		t.Fatalf("RunsStale after the pickup deadline = %v, %v; want the run", stale, err)
	}
	claimed, err := s.RunClaimID(ctx, "homed", "call:gw:2", at(time.Hour))
	if err != nil || claimed == nil || claimed.Attempts != 2 {
		t.Fatalf("RunClaimID by its home = %+v, %v; want it, a second attempt", claimed, err)
	}
	ok, err = s.RunHandHome(ctx, "homed", "call:gw:2", at(time.Minute))
	mustWin(t, "RunHandHome again", ok, err)
	ok, err = s.RunFinishStale(ctx, "homed", at(2*time.Minute), agent.StatusFailed, agent.ReasonFailed, "its process went away")
	mustWin(t, "RunFinishStale of a queued run with a home", ok, err)

	plain := insert(t, s, newRun("plain", t0))
	ok, err = s.RunHandHome(ctx, plain.ID, "", at(time.Minute))
	mustRefuse(t, "RunHandHome with no owner", ok, err)
	if stale, err := s.RunsStale(ctx, at(time.Hour)); err != nil || len(stale) != 0 {
		t.Fatalf("RunsStale lists a queued run without a home: %v, %v", stale, err)
	}
}
