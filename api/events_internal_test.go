package api

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

// memRuns is the part of a store the event hub reads, in memory: package
// sqlstore imports api, so this package's own tests cannot use it.
type memRuns struct {
	agent.Store // the rest: unused here
	mu          sync.Mutex
	runs        []*agent.Run
}

func (m *memRuns) RunInsert(_ context.Context, run *agent.Run) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runs = append(m.runs, run)
	return nil
}

func (m *memRuns) RunList(_ context.Context, f agent.RunFilter) ([]*agent.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.Clone(m.runs)
	slices.Reverse(out)
	return out[:min(len(out), f.Limit)], nil
}

func (m *memRuns) RunGet(_ context.Context, id string) (*agent.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.runs {
		if r.ID == id {
			return r, nil
		}
	}
	return nil, agent.ErrNotFound
}

func (m *memRuns) StepList(context.Context, string) ([]*agent.Step, error) { return nil, nil }

// A subscriber that stops reading is dropped once it is subscriberBacklog
// polls behind, rather than holding up the poller and everyone else: its
// stream ends, and its client reconnects to the current state.
func TestEventsDropASubscriberThatFellBehind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := &memRuns{}
	h := newHub(&Config{Store: st, EventInterval: time.Hour, Logger: slog.New(slog.DiscardHandler), Now: time.Now})
	stuck, reader := h.subscribe(""), h.subscribe("")
	defer h.unsubscribe(reader)
	defer h.unsubscribe(stuck)

	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		if err := st.RunInsert(ctx, &agent.Run{ID: "run_" + string(rune('a'+i)), Owner: "local", Request: []byte(`{}`), CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		h.nudge()
		// Each change is one batch for each subscriber; reader keeps up.
		select {
		case <-reader.batches:
		case <-time.After(time.Until(deadline)):
			t.Fatalf("the reading subscriber got no batch for change %d", i+1)
		}
		// The poller delivers to all under the lock: once it is free,
		// the stuck subscriber has had its batch too.
		h.mu.Lock()
		//lint:ignore SA2001 the lock is a barrier: taking it waits for the poller to finish delivering.
		h.mu.Unlock()
		if i < subscriberBacklog {
			if n := len(stuck.batches); n != i+1 {
				t.Fatalf("after %d changes the stuck subscriber has %d batches waiting", i+1, n)
			}
			continue
		}
		select {
		case <-stuck.dropped:
		default:
			t.Fatalf("the stuck subscriber was not dropped %d polls behind", i+1)
		}
		break
	}
	h.mu.Lock()
	_, stillThere := h.subs[stuck]
	_, readerThere := h.subs[reader]
	h.mu.Unlock()
	if stillThere || !readerThere {
		t.Errorf("after the drop: stuck subscribed %v, reader subscribed %v", stillThere, readerThere)
	}
}
