package storetest

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

// RunCounter is a store that also counts runs by status.
type RunCounter interface {
	agent.Store
	// RunCountByStatus returns the number of runs in each status, in one
	// query. Statuses no run is in are absent.
	RunCountByStatus(ctx context.Context) (map[agent.Status]int64, error)
}

// ExerciseRunCounts runs the suite of RunCountByStatus. newStore returns a
// fresh, empty store for one test and arranges its cleanup.
func ExerciseRunCounts(t *testing.T, newStore func(t *testing.T) RunCounter) {
	t.Helper()
	t.Run("AnEmptyStoreCountsNothing", func(t *testing.T) {
		t.Parallel()
		got, err := newStore(t).RunCountByStatus(t.Context())
		if err != nil || len(got) != 0 {
			t.Fatalf("RunCountByStatus = %v, %v; want an empty map", got, err)
		}
	})
	t.Run("CountsFollowTheTransitions", func(t *testing.T) {
		t.Parallel()
		testRunCounts(t, newStore(t))
	})
}

func testRunCounts(t *testing.T, s RunCounter) {
	ctx := t.Context()
	want := map[agent.Status]int64{}
	check := func(when string) {
		t.Helper()
		got, err := s.RunCountByStatus(ctx)
		if err != nil {
			t.Fatalf("%s: RunCountByStatus: %v", when, err)
		}
		if !maps.Equal(got, want) {
			t.Fatalf("%s: RunCountByStatus = %v, want %v", when, got, want)
		}
	}
	for i := range 7 {
		insert(t, s, newRun(fmt.Sprintf("q%d", i), at(time.Duration(i)*time.Second)))
	}
	want[agent.StatusQueued] = 7
	check("7 queued")

	for i, st := range []agent.Status{agent.StatusWaitingForApproval, agent.StatusWaitingForInput, agent.StatusCompleted, agent.StatusFailed} {
		r := newRun(string(st), at(time.Duration(10+i)*time.Second))
		r.Status = st
		insert(t, s, r)
		want[st] = 1
	}
	check("one in each other status")

	for range 2 {
		run, err := s.RunClaim(ctx, "w1", at(time.Hour))
		if err != nil || run == nil {
			t.Fatalf("RunClaim = %v, %v", run, err)
		}
	}
	want[agent.StatusQueued] -= 2
	want[agent.StatusRunning] += 2
	ok, err := s.RunFinish(ctx, "q6", "", agent.StatusCancelled, agent.ReasonCancelled, "")
	mustWin(t, "cancel", ok, err)
	want[agent.StatusQueued]--
	want[agent.StatusCancelled]++
	check("after 2 claims and a cancel")
}
