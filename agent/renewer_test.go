package agent_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

// holdTool is a tool whose every call waits for its context and notes why
// it ended.
type holdTool struct {
	started chan string // a call's run, when it starts
	mu      sync.Mutex
	causes  map[string]error // by run: why each call's context ended
}

func newHoldTool(b *testBundle) *holdTool {
	h := &holdTool{started: make(chan string, 64), causes: map[string]error{}}
	b.tools.add(&testTool{name: "hold", effect: agent.EffectReadOnly, run: func(ctx context.Context) (*agent.ToolResult, error) {
		run := agent.RunIDFrom(ctx)
		h.started <- run
		<-ctx.Done()
		h.mu.Lock()
		h.causes[run] = context.Cause(ctx)
		h.mu.Unlock()
		return &agent.ToolResult{Outcome: agent.OutcomeCancelled, Text: "stopped"}, nil
	}})
	return h
}

func (h *holdTool) waitStarted(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-h.started:
		case <-time.After(10 * time.Second):
			t.Fatal("the tool calls did not start")
		}
	}
}

func (h *holdTool) cause(run string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.causes[run]
}

// waitRenewals waits until RunRenewLeases has been called n times in all.
func (b *testBundle) waitRenewals(n int) [][]string {
	b.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if got := b.store.batches(); len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("%d lease renewals; want %d", len(b.store.batches()), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A runtime renews the leases of all its runs in flight with one call of
// RunRenewLeases per interval, not one renewal per run: once every run
// holds a call, every renewal names every run, and no run renews its own.
func TestOneRenewalRenewsEveryLeaseInFlight(t *testing.T) {
	t.Parallel()
	const n = 8
	b := setup(t, func(cfg *agent.Config) { cfg.LeaseDuration = 600 * time.Millisecond })
	hold := newHoldTool(b)
	b.start()
	var ids []string
	for range n {
		ids = append(ids, b.submit("alice", turn{Calls: []string{"hold"}}, turn{Final: "done"}).ID)
	}
	hold.waitStarted(t, n)
	claimed := map[string]time.Time{}
	for _, id := range ids {
		claimed[id] = b.waitStatus(id, agent.StatusRunning).LeaseExpires
	}
	single := b.store.single.Load()
	// The next renewal may come before some lease is due (set less than
	// a sixth of the lease ago); the two after it find every one due.
	first := len(b.store.batches()) + 1
	batches := b.waitRenewals(first + 2)
	slices.Sort(ids)
	for i, batch := range batches[first:] {
		slices.Sort(batch)
		if !slices.Equal(batch, ids) {
			t.Errorf("renewal %d named runs %v; want every run in flight, once: %v", first+i, batch, ids)
		}
	}
	if got := b.store.single.Load() - single; got != 0 {
		t.Errorf("%d renewals of one run's lease while the runs held their calls; want none", got)
	}
	for _, id := range ids {
		if got := b.waitStatus(id, agent.StatusRunning).LeaseExpires; !got.After(claimed[id]) {
			t.Errorf("run %s: lease expires %v, as claimed (%v); want it renewed", id, got, claimed[id])
		}
		if err := b.rt.Cancel(context.Background(), agent.Actor{Admin: true}, id); err != nil {
			t.Fatal(err)
		}
	}
}

// A segment whose lease is no longer its own learns it at the next
// renewal: its context ends with ErrLeaseLost, and it writes nothing more
// — no step of the call it held, no settlement.
func TestASegmentWhoseLeaseWasTakenLearnsItAtTheNextRenewal(t *testing.T) {
	t.Parallel()
	tap := newLogTap()
	b := setup(t, func(cfg *agent.Config) {
		cfg.LeaseDuration = 600 * time.Millisecond
		cfg.Logger = slog.New(tap)
	})
	hold := newHoldTool(b)
	b.start()
	run := b.submit("alice", turn{Calls: []string{"hold"}}, turn{Final: "done"})
	hold.waitStarted(t, 1)
	held := b.waitStatus(run.ID, agent.StatusRunning)
	// Someone else moves the run on (here: a suspension by its owner's
	// name, as a takeover would): the segment no longer holds it.
	state := []byte(`{"taken":true}`)
	if ok, err := b.store.Store.RunSuspend(context.Background(), run.ID, held.LeaseOwner, agent.StatusWaitingForApproval, state); !ok || err != nil {
		t.Fatalf("RunSuspend = %v, %v", ok, err)
	}
	if why := tap.waitFor(t, "segment ended", run.ID).attr("why"); why != "lease lost" {
		t.Fatalf("the segment ended because %q; want lease lost", why)
	}
	if cause := hold.cause(run.ID); !errors.Is(cause, agent.ErrLeaseLost) {
		t.Errorf("the call's context ended with %v; want ErrLeaseLost", cause)
	}
	if steps := b.steps(run.ID); len(steps) != 1 {
		t.Errorf("the run has %d steps; want 1 (the model's): a segment without its lease records nothing", len(steps))
	}
	after, err := b.store.Store.RunGet(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.Status != agent.StatusWaitingForApproval || string(after.Suspended) != string(state) {
		t.Errorf("the run is %s with state %s; want it left as the taker left it", after.Status, after.Suspended)
	}
}

// A run cancelled by a row change this process's watcher has not seen
// yet (its poll is an hour away) is stopped by the renewal that finds the
// lease gone: the row says cancelled, so the call's context ends with
// ErrRunCancelled and the segment records the cancelled call's step.
func TestACancelledRunsSegmentLearnsItFromTheRenewal(t *testing.T) {
	t.Parallel()
	tap := newLogTap()
	b := setup(t, func(cfg *agent.Config) {
		cfg.LeaseDuration = 600 * time.Millisecond
		cfg.WatchInterval = time.Hour
		cfg.Logger = slog.New(tap)
	})
	hold := newHoldTool(b)
	b.start()
	run := b.submit("alice", turn{Calls: []string{"hold"}}, turn{Final: "done"})
	hold.waitStarted(t, 1)
	// Another process's cancel: the row only, no word to this runtime.
	if ok, err := b.store.Store.RunFinish(context.Background(), run.ID, "", agent.StatusCancelled, agent.ReasonCancelled, ""); !ok || err != nil {
		t.Fatalf("RunFinish = %v, %v", ok, err)
	}
	if why := tap.waitFor(t, "segment ended", run.ID).attr("why"); why != "run cancelled" {
		t.Fatalf("the segment ended because %q; want run cancelled", why)
	}
	if cause := hold.cause(run.ID); !errors.Is(cause, agent.ErrRunCancelled) {
		t.Errorf("the call's context ended with %v; want ErrRunCancelled", cause)
	}
	steps := b.steps(run.ID)
	if len(steps) != 2 || steps[1].Tool != "hold" {
		t.Fatalf("steps = %d; want the model's and the held call's", len(steps))
	}
	if got := b.waitStatus(run.ID, agent.StatusCancelled); got.Reason != agent.ReasonCancelled {
		t.Errorf("the run's reason is %s; want cancelled", got.Reason)
	}
}
