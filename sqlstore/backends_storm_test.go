package sqlstore_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/sqlstore"
)

// A storm of operators' cancels — many runs, each cancelled twice at once
// — leaves every run cancelled with exactly one winner per run, however
// the store groups the cancels into statements (finish_batch.go).
func TestAStormOfCancelsHasOneWinnerPerRun(t *testing.T) {
	onEachBackend(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		s := open(t)
		ctx := t.Context()
		const runs = 64
		for i := range runs {
			if err := s.RunInsert(ctx, queuedRun(fmt.Sprint("r", i))); err != nil {
				t.Fatal(err)
			}
		}
		// A finished run is refused in the same storm.
		if ok, err := s.RunFinish(ctx, "r0", "", agent.StatusFailed, agent.ReasonFailed, "before"); !ok || err != nil {
			t.Fatalf("RunFinish(r0, failed) = %v, %v", ok, err)
		}
		wins := make([]atomic.Int32, runs)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range runs {
			for range 2 {
				wg.Go(func() {
					<-start
					won, err := s.RunFinish(ctx, fmt.Sprint("r", i), "", agent.StatusCancelled, agent.ReasonCancelled, "")
					if err != nil {
						t.Errorf("cancelling r%d: %v", i, err)
					}
					if won {
						wins[i].Add(1)
					}
				})
			}
		}
		close(start)
		wg.Wait()
		for i := range runs {
			want, status := int32(1), agent.StatusCancelled
			if i == 0 {
				want, status = 0, agent.StatusFailed
			}
			if got := wins[i].Load(); got != want {
				t.Errorf("r%d: %d cancels won; want %d", i, got, want)
			}
			run, err := s.RunGet(ctx, fmt.Sprint("r", i))
			if err != nil {
				t.Fatal(err)
			}
			if run.Status != status || run.FinishedAt.IsZero() {
				t.Errorf("r%d is %s (finished %v); want %s with a finish time", i, run.Status, run.FinishedAt, status)
			}
		}
	})
}

// CancelRunJobs leaves out the jobs that have finished: the workers ended
// them, and a transaction of job cancels would only contend with theirs.
// With every job finished, it opens no transaction at all.
func TestCancelRunJobsLeavesFinishedJobsOut(t *testing.T) {
	onEachCountedBackend(t, func(t *testing.T, s *sqlstore.Store, c *sqlstore.StatementCounter) {
		ctx := t.Context()
		for _, id := range []string{"ended", "running"} {
			if err := s.RunInsert(ctx, queuedRun(id)); err != nil {
				t.Fatal(err)
			}
			if ok, err := s.RunFinish(ctx, id, "", agent.StatusCancelled, agent.ReasonCancelled, ""); !ok || err != nil {
				t.Fatalf("RunFinish(%s) = %v, %v", id, ok, err)
			}
		}
		s.FinishRunJob(t, "ended")
		before := c.Read()
		if err := s.CancelRunJobs(ctx, []string{"ended"}); err != nil {
			t.Fatal(err)
		}
		if d := c.Read().Sub(before); d.Transactions != 0 || d.Writes != 0 {
			t.Errorf("cancelling the finished job of a run took %d transactions, %d writes; want none", d.Transactions, d.Writes)
		}
		if err := s.CancelRunJobs(ctx, []string{"ended", "running"}); err != nil {
			t.Fatal(err)
		}
		for id, want := range map[string]string{"ended": "completed", "running": "cancelled"} {
			if _, state, _, _ := s.RunJob(t, id); state != want {
				t.Errorf("job of %s is %q; want %q", id, state, want)
			}
		}
	})
}

// CancelRunJobs cancels the jobs of the cancelled runs it is given, in one
// transaction, and leaves the others' alone.
func TestCancelRunJobsCancelsOnlyCancelledRunsJobs(t *testing.T) {
	onEachBackend(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		s := open(t)
		ctx := t.Context()
		for _, id := range []string{"c1", "c2", "q1"} {
			if err := s.RunInsert(ctx, queuedRun(id)); err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range []string{"c1", "c2"} {
			if ok, err := s.RunFinish(ctx, id, "", agent.StatusCancelled, agent.ReasonCancelled, ""); !ok || err != nil {
				t.Fatalf("RunFinish(%s) = %v, %v", id, ok, err)
			}
		}
		if err := s.CancelRunJobs(ctx, []string{"c1", "c2", "q1", "missing"}); err != nil {
			t.Fatal(err)
		}
		for id, want := range map[string]string{"c1": "cancelled", "c2": "cancelled", "q1": "available"} {
			if _, state, _, _ := s.RunJob(t, id); state != want {
				t.Errorf("job of %s is %q; want %q", id, state, want)
			}
		}
		if err := s.CancelRunJobs(ctx, nil); err != nil {
			t.Fatalf("CancelRunJobs(nil) = %v", err)
		}
	})
}
