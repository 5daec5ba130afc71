package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

// RunRenewLeases renews, of the leases it is given, exactly those whose
// owner still holds a running run — the guard of RunRenewLease, pair by
// pair — and says which; every other row is left as it was.
func testRenewLeases(t *testing.T, s agent.Store) {
	ctx := t.Context()
	r1 := insertRunning(t, s, "r1", "w1", at(time.Minute))
	r2 := insertRunning(t, s, "r2", "w2", at(time.Minute))
	taken := insertRunning(t, s, "taken", "w9", at(time.Minute)) // asked for as w1's
	queued := insert(t, s, newRun("queued", t0))
	insertRunning(t, s, "cancelled", "w1", at(time.Minute))
	ok, err := s.RunFinish(ctx, "cancelled", "", agent.StatusCancelled, agent.ReasonCancelled, "")
	mustWin(t, "cancel", ok, err)
	cancelled := get(t, s, "cancelled")
	insertRunning(t, s, "suspended", "w1", at(time.Minute))
	ok, err = s.RunSuspend(ctx, "suspended", "w1", agent.StatusWaitingForApproval, []byte(`{"s":1}`))
	mustWin(t, "suspend", ok, err)
	suspended := get(t, s, "suspended")
	nobody := insertRunning(t, s, "nobody", "", at(time.Minute)) // held by no one

	leases := []agent.Lease{
		{RunID: "r1", Owner: "w1"}, {RunID: "r2", Owner: "w2"}, {RunID: "taken", Owner: "w1"},
		{RunID: "queued", Owner: "w1"}, {RunID: "cancelled", Owner: "w1"}, {RunID: "suspended", Owner: "w1"},
		{RunID: "nobody", Owner: ""}, {RunID: "unknown", Owner: "w1"},
	}
	renewed, err := s.RunRenewLeases(ctx, leases, at(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(renewed)
	if !slices.Equal(renewed, []string{"r1", "r2"}) {
		t.Fatalf("RunRenewLeases renewed %v; want [r1 r2], the runs their owners hold", renewed)
	}
	r1.LeaseExpires, r2.LeaseExpires = at(2*time.Minute), at(2*time.Minute)
	for _, want := range []*agent.Run{r1, r2, taken, queued, cancelled, suspended, nobody} {
		mustBe(t, "after RunRenewLeases, run "+want.ID, get(t, s, want.ID), want)
	}
	// A renewal to the same deadline still reports the leases held.
	renewed, err = s.RunRenewLeases(ctx, leases[:2], at(2*time.Minute))
	if slices.Sort(renewed); err != nil || !slices.Equal(renewed, []string{"r1", "r2"}) {
		t.Fatalf("RunRenewLeases to the same deadline = %v, %v; want [r1 r2]", renewed, err)
	}
	if renewed, err := s.RunRenewLeases(ctx, nil, at(time.Hour)); err != nil || len(renewed) != 0 {
		t.Fatalf("RunRenewLeases(none) = %v, %v; want nothing", renewed, err)
	}
}

// RunRenewLeases takes any number of leases (a store may split them into
// several statements) and renews every one that is held.
func testRenewManyLeases(t *testing.T, s agent.Store) {
	ctx := t.Context()
	const n = 1201
	var leases []agent.Lease
	for i := range n {
		id, owner := fmt.Sprintf("r%04d", i), fmt.Sprintf("w%d", i%7)
		insertRunning(t, s, id, owner, at(time.Minute))
		leases = append(leases, agent.Lease{RunID: id, Owner: owner})
	}
	leases[n-1].Owner = "not-the-owner" // the last chunk's last lease is not held
	renewed, err := s.RunRenewLeases(ctx, leases, at(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(renewed) != n-1 || slices.Contains(renewed, leases[n-1].RunID) {
		t.Fatalf("RunRenewLeases renewed %d of %d leases (the last one: %v); want all but the last",
			len(renewed), n, slices.Contains(renewed, leases[n-1].RunID))
	}
	for _, i := range []int{0, n / 2, n - 2} {
		if got := get(t, s, leases[i].RunID).LeaseExpires; !got.Equal(at(time.Hour)) {
			t.Fatalf("run %s's lease expires %v; want %v", leases[i].RunID, got, at(time.Hour))
		}
	}
	if got := get(t, s, leases[n-1].RunID).LeaseExpires; !got.Equal(at(time.Minute)) {
		t.Fatalf("the lease asked for by another owner moved to %v", got)
	}
}
