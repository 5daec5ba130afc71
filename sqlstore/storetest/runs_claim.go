package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

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

func testClaimID(t *testing.T, s agent.Store) {
	ctx := t.Context()
	insert(t, s, newRun("older", t0))
	insert(t, s, newRun("r1", at(time.Second)))
	before := time.Now().Add(-time.Second)
	lease := at(time.Minute)
	r, err := s.RunClaimID(ctx, "r1", "w1", lease)
	if err != nil || r == nil {
		t.Fatalf("RunClaimID(r1) = %v, %v; want the run", r, err)
	}
	if r.ID != "r1" || r.Status != agent.StatusRunning || r.LeaseOwner != "w1" || !r.LeaseExpires.Equal(lease) ||
		r.Attempts != 1 || r.StartedAt.Before(before) {
		t.Fatalf("claimed run = %+v; want r1 running, held by w1 until %v, 1 attempt, started now", r, lease)
	}
	mustBe(t, "RunGet of the claimed run", get(t, s, "r1"), r)
	if got := get(t, s, "older"); got.Status != agent.StatusQueued {
		t.Fatalf("the older run is %q after claiming r1 by id; want it still queued", got.Status)
	}
	again, err := s.RunClaimID(ctx, "r1", "w2", lease)
	if again != nil || err != nil {
		t.Fatalf("second RunClaimID(r1) = %v, %v; want nil, nil (it is running)", again, err)
	}
	if _, err := s.RunClaimID(ctx, "r1", "", lease); err == nil {
		t.Fatal("RunClaimID with an empty owner succeeded; want an error")
	}
}

func testClaimIDNotQueued(t *testing.T, s agent.Store) {
	ctx := t.Context()
	insertRunning(t, s, "running", "w0", at(time.Minute))
	insert(t, s, newRun("cancelled", t0))
	ok, err := s.RunFinish(ctx, "cancelled", "", agent.StatusCancelled, agent.ReasonCancelled, "")
	mustWin(t, "RunFinish(cancelled)", ok, err)
	for _, id := range []string{"running", "cancelled", "missing"} {
		r, err := s.RunClaimID(ctx, id, "w1", at(time.Minute))
		if r != nil || err != nil {
			t.Fatalf("RunClaimID(%s) = %v, %v; want nil, nil", id, r, err)
		}
	}
	if got := get(t, s, "running"); got.LeaseOwner != "w0" || got.Attempts != 1 {
		t.Fatalf("a running run after RunClaimID: owner %q, attempts %d; want w0, 1 (untouched)", got.LeaseOwner, got.Attempts)
	}
}

func testConcurrentClaimID(t *testing.T, s agent.Store) {
	ctx := t.Context()
	insert(t, s, newRun("r1", t0))
	winners := race(t, racers, func(i int) (bool, error) {
		r, err := s.RunClaimID(ctx, "r1", fmt.Sprintf("w%d", i), at(time.Minute))
		return r != nil, err
	})
	if len(winners) != 1 {
		t.Fatalf("%d concurrent claims of run r1 by id: %v won, want exactly one", racers, winners)
	}
	if got := get(t, s, "r1"); got.Attempts != 1 || got.LeaseOwner != fmt.Sprintf("w%d", winners[0]) {
		t.Fatalf("r1 held by %q after %d attempts; want w%d after 1", got.LeaseOwner, got.Attempts, winners[0])
	}
}
