package sqlstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/sqlstore"
)

// River carries queued runs on both backends: these tests look at the
// river_job rows the store's transitions leave, and at what a store's
// Queue hands its work function.

// queuePatience bounds every wait for a Queue: it only keeps a broken test
// from hanging (River's first retry comes after about a second).
const queuePatience = 30 * time.Second

func queuedRun(id string) *agent.Run {
	return &agent.Run{ID: id, Owner: "alice", Request: []byte(`{"prompt":"p"}`)}
}

func TestAQueuedRunIsAJobInsertedWithItsRow(t *testing.T) {
	onEachBackend(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		s := open(t)
		ctx := t.Context()
		if err := s.RunInsert(ctx, queuedRun("r1")); err != nil {
			t.Fatal(err)
		}
		_, state, argRun, ok := s.RunJob(t, "r1")
		if !ok || state != "available" || argRun != "r1" {
			t.Fatalf("job of a queued run: ok %v, state %q, run %q; want an available job naming r1", ok, state, argRun)
		}
		// The same id again fails — and leaves no job behind: one transaction.
		if err := s.RunInsert(ctx, queuedRun("r1")); err == nil {
			t.Fatal("inserting run r1 twice succeeded")
		}
		if n := s.RunJobs(t); n != 1 {
			t.Fatalf("%d run jobs after a failed insert; want 1 (the failed insert's job rolled back)", n)
		}
		// A run born running is not queued: no job.
		running := queuedRun("r2")
		running.Status, running.LeaseOwner, running.LeaseExpires = agent.StatusRunning, "w", time.Now().Add(time.Minute)
		if err := s.RunInsert(ctx, running); err != nil {
			t.Fatal(err)
		}
		if _, _, _, ok := s.RunJob(t, "r2"); ok {
			t.Fatal("a run inserted running has a job; want none")
		}
	})
}

func TestCancelRunJobCancelsTheJobOfACancelledRun(t *testing.T) {
	onEachBackend(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		s := open(t)
		ctx := t.Context()
		if err := s.RunInsert(ctx, queuedRun("r1")); err != nil {
			t.Fatal(err)
		}
		// Not cancelled yet: the job stays.
		if err := s.CancelRunJob(ctx, "r1"); err != nil {
			t.Fatal(err)
		}
		if _, state, _, _ := s.RunJob(t, "r1"); state != "available" {
			t.Fatalf("job of a queued run is %q after CancelRunJob; want available (the row says queued)", state)
		}
		if ok, err := s.RunFinish(ctx, "r1", "", agent.StatusCancelled, agent.ReasonCancelled, ""); !ok || err != nil {
			t.Fatalf("RunFinish(cancelled) = %v, %v", ok, err)
		}
		if err := s.CancelRunJob(ctx, "r1"); err != nil {
			t.Fatal(err)
		}
		if _, state, _, _ := s.RunJob(t, "r1"); state != "cancelled" {
			t.Fatalf("job of a cancelled queued run is %q; want cancelled", state)
		}
		// Again, and for runs without a job: nothing to do, no error.
		for _, id := range []string{"r1", "missing"} {
			if err := s.CancelRunJob(ctx, id); err != nil {
				t.Fatalf("CancelRunJob(%s) = %v", id, err)
			}
		}
	})
}

func TestARequeuedRunGetsANewJob(t *testing.T) {
	onEachBackend(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		s := open(t)
		ctx := t.Context()
		if err := s.RunInsert(ctx, queuedRun("r1")); err != nil {
			t.Fatal(err)
		}
		first, _, _, _ := s.RunJob(t, "r1")
		if r, err := s.RunClaimID(ctx, "r1", "w1", time.Now().Add(time.Minute)); r == nil || err != nil {
			t.Fatalf("RunClaimID = %v, %v", r, err)
		}
		if ok, err := s.RunRequeue(ctx, "r1", "w1"); !ok || err != nil {
			t.Fatalf("RunRequeue = %v, %v", ok, err)
		}
		second, state, _, _ := s.RunJob(t, "r1")
		if second == first || state != "available" {
			t.Fatalf("after a requeue the run's job is %d (%s); want a new available job, not %d", second, state, first)
		}
		// A stale requeue — the worker died — queues another.
		if r, err := s.RunClaimID(ctx, "r1", "w2", time.Now().Add(time.Millisecond)); r == nil || err != nil {
			t.Fatalf("RunClaimID = %v, %v", r, err)
		}
		if ok, err := s.RunRequeueStale(ctx, "r1", time.Now().Add(time.Second)); !ok || err != nil {
			t.Fatalf("RunRequeueStale = %v, %v", ok, err)
		}
		if third, state, _, _ := s.RunJob(t, "r1"); third == second || state != "available" {
			t.Fatalf("after a stale requeue the run's job is %d (%s); want a new available job", third, state)
		}
		// A refused requeue (a non-idempotent write in flight) queues nothing.
		if r, err := s.RunClaimID(ctx, "r1", "w3", time.Now().Add(time.Minute)); r == nil || err != nil {
			t.Fatalf("RunClaimID = %v, %v", r, err)
		}
		if ok, err := s.RunSetPendingEffect(ctx, "r1", "w3", agent.EffectNonIdempotentWrite, time.Now().Add(time.Minute)); !ok || err != nil {
			t.Fatalf("RunSetPendingEffect = %v, %v", ok, err)
		}
		jobs := s.RunJobs(t)
		if ok, err := s.RunRequeue(ctx, "r1", "w3"); ok || err != nil {
			t.Fatalf("RunRequeue mid non-idempotent write = %v, %v; want false, nil", ok, err)
		}
		if n := s.RunJobs(t); n != jobs {
			t.Fatalf("a refused requeue left %d jobs; want %d", n, jobs)
		}
	})
}

// worked records what a Queue hands out.
type worked struct {
	mu   sync.Mutex
	runs []string
	seen chan string
}

func (w *worked) add(id string) {
	w.mu.Lock()
	w.runs = append(w.runs, id)
	w.mu.Unlock()
	w.seen <- id
}

// workQueue runs q until the test ends and waits for it to stop.
func workQueue(t *testing.T, q agent.Queue, work func(ctx context.Context, runID string) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- q.Work(ctx, 4, work) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Queue.Work: %v", err)
		}
	})
}

func TestQueueHandsOutEachQueuedRunOnce(t *testing.T) {
	onEachBackend(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		s := open(t)
		w := &worked{seen: make(chan string, 10)}
		workQueue(t, s.Queue(sqlstore.QueueOptions{}), func(ctx context.Context, runID string) error {
			w.add(runID)
			return nil
		})
		want := map[string]bool{"r1": true, "r2": true, "r3": true}
		for id := range want {
			if err := s.RunInsert(t.Context(), queuedRun(id)); err != nil {
				t.Fatal(err)
			}
		}
		for range want {
			select {
			case id := <-w.seen:
				if !want[id] {
					t.Fatalf("handed out %q; want each of r1, r2, r3 once (so far %v)", id, w.runs)
				}
				delete(want, id)
			case <-time.After(queuePatience):
				t.Fatalf("still waiting for %v to be handed out", want)
			}
		}
	})
}

func TestQueueHandsOutARunAgainAfterAnError(t *testing.T) {
	onEachBackend(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		s := open(t)
		w := &worked{seen: make(chan string, 10)}
		workQueue(t, s.Queue(sqlstore.QueueOptions{}), func(ctx context.Context, runID string) error {
			w.add(runID)
			if len(w.runs) == 1 {
				return errors.New("store unreachable")
			}
			return nil
		})
		if err := s.RunInsert(t.Context(), queuedRun("r1")); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			select {
			case <-w.seen:
			case <-time.After(queuePatience):
				t.Fatalf("handed out %d times; want 2 (once more after the error)", i)
			}
		}
	})
}

// A cancel made by another process (a second store on the same database)
// ends the context of the work holding the run's job.
func TestCancelFromAnotherStoreEndsTheJobsContext(t *testing.T) {
	onEachBackend(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		worker, other := open(t), open(t)
		started := make(chan struct{})
		ended := make(chan error, 1)
		workQueue(t, worker.Queue(sqlstore.QueueOptions{}), func(ctx context.Context, runID string) error {
			close(started)
			<-ctx.Done()
			ended <- context.Cause(ctx)
			return nil
		})
		if err := other.RunInsert(t.Context(), queuedRun("r1")); err != nil {
			t.Fatal(err)
		}
		select {
		case <-started:
		case <-time.After(queuePatience):
			t.Fatal("the run was never handed out")
		}
		if ok, err := other.RunFinish(t.Context(), "r1", "", agent.StatusCancelled, agent.ReasonCancelled, ""); !ok || err != nil {
			t.Fatalf("RunFinish(cancelled) = %v, %v", ok, err)
		}
		if err := other.CancelRunJob(t.Context(), "r1"); err != nil {
			t.Fatal(err)
		}
		select {
		case cause := <-ended:
			if cause == nil {
				t.Fatal("the job's context ended without a cause")
			}
		case <-time.After(queuePatience):
			t.Fatal("the job's context never ended after the run was cancelled elsewhere")
		}
	})
}

// A run queued before River carried runs (no job) is given one when a
// Queue starts, and handed out; two queues starting at once give it one
// job, not two.
func TestQueueAdoptsQueuedRunsWithoutAJob(t *testing.T) {
	onEachBackend(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		a, b := open(t), open(t)
		if err := a.RunInsert(t.Context(), queuedRun("old")); err != nil {
			t.Fatal(err)
		}
		a.OrphanRun(t, "old")
		if n := a.RunJobs(t); n != 0 {
			t.Fatalf("%d run jobs after orphaning; want 0", n)
		}
		w := &worked{seen: make(chan string, 10)}
		work := func(ctx context.Context, runID string) error {
			w.add(runID)
			return nil
		}
		workQueue(t, a.Queue(sqlstore.QueueOptions{}), work)
		workQueue(t, b.Queue(sqlstore.QueueOptions{}), work)
		select {
		case id := <-w.seen:
			if id != "old" {
				t.Fatalf("handed out %q; want old", id)
			}
		case <-time.After(queuePatience):
			t.Fatal("the run without a job was never handed out")
		}
		_, _, argRun, ok := a.RunJob(t, "old")
		if !ok || argRun != "old" {
			t.Fatalf("the adopted run's job: ok %v, run %q", ok, argRun)
		}
		if n := a.RunJobs(t); n != 1 {
			t.Fatalf("%d run jobs after two queues adopted one run; want 1", n)
		}
	})
}
