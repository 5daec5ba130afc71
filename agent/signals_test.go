package agent_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

// appendTap notes, in order with the test's own events, each step a run
// appends.
type appendTap struct {
	*countingStore
	log *eventLog
}

func (a *appendTap) StepAppend(ctx context.Context, owner string, step *agent.Step) error {
	if step.Kind == agent.StepTool {
		a.log.add("append " + step.RunID)
	}
	return a.countingStore.StepAppend(ctx, owner, step)
}

type eventLog struct {
	mu     sync.Mutex
	events []string
	added  chan struct{} // a wake-up per event, for waiters
}

func (l *eventLog) add(e string) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
	select {
	case l.added <- struct{}{}:
	default:
	}
}

func (l *eventLog) has(e string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, got := range l.events {
		if got == e {
			return true
		}
	}
	return false
}

func (l *eventLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

// Signals before bookkeeping: a cancelled run does not record its last
// step while a call that a cancel stopped has not returned yet (its signal
// is still to be sent). Run a's call returns at once; run b's, cancelled
// in the same storm, only when the test lets it, which it does once a's
// bookkeeping is seen waiting: a's last step comes after b's return.
func TestCancelledBookkeepingWaitsForTheStormsSignals(t *testing.T) {
	t.Parallel()
	log := &eventLog{added: make(chan struct{}, 1)}
	b := setup(t, func(cfg *agent.Config) {
		cfg.Store = &appendTap{countingStore: cfg.Store.(*countingStore), log: log}
	})
	agent.SetSignalWait(b.rt, time.Minute) // longer than the test: only b's return ends the wait
	release := make(chan struct{})
	started := make(chan string, 2)
	b.tools.add(&testTool{name: "prompt", effect: agent.EffectReadOnly, run: func(ctx context.Context) (*agent.ToolResult, error) {
		started <- agent.RunIDFrom(ctx)
		<-ctx.Done()
		return &agent.ToolResult{Outcome: agent.OutcomeCancelled, Text: "stopped"}, nil
	}})
	b.tools.add(&testTool{name: "slow", effect: agent.EffectReadOnly, run: func(ctx context.Context) (*agent.ToolResult, error) {
		started <- agent.RunIDFrom(ctx)
		<-ctx.Done()
		<-release // a call slow to see its cancel: its signal is not out yet
		log.add("returned " + agent.RunIDFrom(ctx))
		return &agent.ToolResult{Outcome: agent.OutcomeCancelled, Text: "stopped"}, nil
	}})
	b.start()
	a := b.submit("alice", turn{Calls: []string{"prompt"}}, turn{Final: "done"}).ID
	bb := b.submit("alice", turn{Calls: []string{"slow"}}, turn{Final: "done"}).ID
	for range 2 {
		select {
		case <-started:
		case <-time.After(10 * time.Second): // only keeps a broken test from hanging
			t.Fatal("the calls did not start")
		}
	}
	for _, id := range []string{bb, a} {
		if err := b.rt.Cancel(context.Background(), agent.Actor{Admin: true}, id); err != nil {
			t.Fatal(err)
		}
	}
	// a's call has returned; its bookkeeping must wait for b's.
	deadline := time.After(10 * time.Second) // only keeps a broken test from hanging
	for agent.SignalsAwaited(b.rt) == 0 {
		if log.has("append " + a) {
			close(release)
			t.Fatalf("run %s recorded its last step while run %s's cancelled call had not returned", a, bb)
		}
		select {
		case <-log.added:
		case <-time.After(time.Millisecond):
		case <-deadline:
			close(release)
			t.Fatal("no bookkeeping waited for the storm's signals")
		}
	}
	close(release)
	b.waitStatus(a, agent.StatusCancelled)
	for !log.has("append "+a) || !log.has("append "+bb) {
		select {
		case <-log.added:
		case <-time.After(10 * time.Second): // only keeps a broken test from hanging
			t.Fatalf("the cancelled runs' last steps were not recorded: %v", log.list())
		}
	}
	events := log.list()
	if index(events, "returned "+bb) > index(events, "append "+a) {
		t.Errorf("events %v: want run %s's call returned before run %s's last step", events, bb, a)
	}
}

func index(s []string, e string) int {
	for i, got := range s {
		if got == e {
			return i
		}
	}
	return -1
}
