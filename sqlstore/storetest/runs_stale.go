package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

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
