package loadtest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/andonhq/andon/agent"
)

// shortScript is a one-tool-call run: echo, then an answer.
var shortScript = json.RawMessage(`{"steps":[{"tool_calls":[{"name":"mcp_load_echo","arguments":{"text":"hi"}}]},{"text":"done"}]}`)

// Throughput is what [Harness.ShortRuns] measured.
type Throughput struct {
	Runs int
	// Elapsed is from the first submit to the last run completed.
	Elapsed time.Duration
	// PerSecond is Runs over Elapsed.
	PerSecond float64
	// PerRun is the statements the store sent per run, WritesPerRun the
	// part that changed rows, TxPerRun its transactions, and PoolPerRun
	// every query of the pool (PostgreSQL only; River's included).
	PerRun, WritesPerRun, TxPerRun, PoolPerRun float64
}

// ShortRuns submits runs one-tool-call runs from submitters goroutines at
// once and waits until all have completed. It fails if any ended
// otherwise.
func (h *Harness) ShortRuns(ctx context.Context, runs, submitters int) (*Throughput, error) {
	ctx, done := h.guard(ctx)
	defer done()
	ids := make([]string, runs)
	errs := make([]error, submitters)
	c0, t0 := h.Counts(), time.Now()
	var wg sync.WaitGroup
	for w := range submitters {
		wg.Go(func() {
			for i := w; i < runs; i += submitters {
				id, err := h.submit(ctx, &agent.Request{Prompt: "short", Model: "script", Script: shortScript})
				if err != nil {
					errs[w] = err
					return
				}
				ids[i] = id
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("loadtest: submitting a short run: %w", err)
		}
	}
	for _, id := range ids {
		for {
			run, err := h.probe.RunGet(ctx, id)
			if err != nil {
				return nil, err
			}
			if run.Status == agent.StatusCompleted {
				break
			}
			if run.Status.Terminal() {
				return nil, fmt.Errorf("loadtest: short run %s ended %s (%s): %s", id, run.Status, run.Reason, run.Error)
			}
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("loadtest: short run %s is %s: %w", id, run.Status, ctx.Err())
			case <-time.After(time.Millisecond):
			}
		}
	}
	elapsed := time.Since(t0)
	d := h.Counts().Sub(c0)
	n := float64(runs)
	return &Throughput{Runs: runs, Elapsed: elapsed, PerSecond: n / elapsed.Seconds(),
		PerRun: float64(d.Statements) / n, WritesPerRun: float64(d.Writes) / n,
		TxPerRun: float64(d.Transactions) / n, PoolPerRun: float64(d.PoolQueries) / n}, nil
}
