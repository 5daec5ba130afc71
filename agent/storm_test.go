package agent_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
)

// A storm of cancels — every run in flight cancelled at once — records
// every cancelled run's last step: the held call, cancelled. (The figure
// at 10,000 runs is a measurement: docs/benchmarks.md.)
func TestAStormOfCancelsRecordsEveryLastStep(t *testing.T) {
	t.Parallel()
	const k = 100
	tap := &endTap{ended: map[string]string{}, all: make(chan struct{}), want: k}
	b := setup(t, func(cfg *agent.Config) {
		cfg.MaxConcurrentRuns = k
		cfg.Logger = slog.New(tap)
	})
	hold := newHoldTool(b)
	b.start()
	ids := make([]string, k)
	for i := range ids {
		ids[i] = b.submit("alice", turn{Calls: []string{"hold"}}, turn{Final: "done"}).ID
	}
	hold.waitStarted(t, k)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, id := range ids {
		wg.Go(func() {
			<-start
			if err := b.rt.Cancel(context.Background(), agent.Actor{Admin: true}, id); err != nil {
				t.Errorf("cancelling %s: %v", id, err)
			}
		})
	}
	close(start)
	wg.Wait()
	select {
	case <-tap.all:
	case <-time.After(time.Minute): // only keeps a broken test from hanging
		t.Fatalf("%d of %d segments ended", tap.count(), k)
	}
	for _, id := range ids {
		if why := tap.why(id); why != "run cancelled" {
			t.Errorf("run %s's segment ended because %q; want run cancelled", id, why)
		}
		steps := b.steps(id)
		if len(steps) != 2 || steps[1].Tool != "hold" || steps[1].Outcome != agent.OutcomeCancelled {
			t.Errorf("run %s has %d steps; want the model's and the cancelled call's", id, len(steps))
		}
	}
}

// endTap notes why each segment ended, and closes all once want have.
type endTap struct {
	mu    sync.Mutex
	ended map[string]string // run → why
	want  int
	all   chan struct{}
}

func (e *endTap) Enabled(context.Context, slog.Level) bool { return true }
func (e *endTap) WithAttrs([]slog.Attr) slog.Handler       { return e }
func (e *endTap) WithGroup(string) slog.Handler            { return e }
func (e *endTap) Handle(_ context.Context, r slog.Record) error {
	if !strings.Contains(r.Message, "segment ended") {
		return nil
	}
	var run, why string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "run":
			run = a.Value.String()
		case "why":
			why = a.Value.String()
		}
		return true
	})
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ended[run] = why
	if len(e.ended) == e.want {
		close(e.all)
	}
	return nil
}

func (e *endTap) why(run string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ended[run]
}

func (e *endTap) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.ended)
}
