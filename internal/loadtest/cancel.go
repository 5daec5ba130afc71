package loadtest

import (
	"context"
	"fmt"
	"runtime/trace"
	"slices"
	"sync"
	"time"

	"github.com/andonhq/andon/agent"
)

// Sample is one cancel, measured.
type Sample struct {
	RunID string
	// ToWire is from just before the cancel was asked for to the moment
	// the MCP server received the cancel's signal: the record of the
	// notifications/cancelled it read (stdio), or of the call's response
	// stream closing (2026-07-28 HTTP).
	ToWire time.Duration
	// ToStopped is from the same moment to the MCP server's record that
	// the call's handler saw its request cancelled and stopped: after
	// the server read and recorded every message before the cancel.
	ToStopped time.Duration
	// Took is how long the cancel itself took: until Runtime.Cancel
	// returned (in process), or the API's took_ms (across processes).
	Took time.Duration
}

// actor cancels every run: the harness's runs are all its own.
var actor = agent.Actor{ID: "load", Admin: true}

// Cancel cancels every run of held at once — one goroutine each, released
// together — and returns a sample of each, once the server has seen every
// call cancelled. A wave of one is a cancel on its own.
func (h *Harness) Cancel(ctx context.Context, held []*Held) ([]Sample, error) {
	ctx, done := h.guard(ctx)
	defer done()
	// A wave is a task in an execution trace (andon-load -trace): the
	// span from the first cancel to the last signal seen is what to read.
	ctx, task := trace.NewTask(ctx, "cancel wave")
	defer task.End()
	samples := make([]Sample, len(held))
	errs := make([]error, len(held))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, hd := range held {
		wg.Go(func() {
			<-start
			t0 := time.Now()
			took, err := h.cancel(ctx, hd.RunID)
			if err != nil {
				errs[i] = fmt.Errorf("loadtest: cancelling run %s: %w", hd.RunID, err)
				return
			}
			wire, stopped, err := h.calls.waitCancelled(ctx, hd.tag)
			if err != nil {
				errs[i] = fmt.Errorf("loadtest: run %s: %w", hd.RunID, err)
				return
			}
			samples[i] = Sample{RunID: hd.RunID, ToWire: wire.Sub(t0), ToStopped: stopped.Sub(t0), Took: took}
		})
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	for _, hd := range held {
		h.calls.forget(hd.tag)
	}
	return samples, nil
}

// Stats summarises durations.
type Stats struct {
	N             int
	P50, P99, Max time.Duration
}

// Summarise returns the nearest-rank p50, p99 and max of ds.
func Summarise(ds []time.Duration) Stats {
	if len(ds) == 0 {
		return Stats{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := func(p int) time.Duration {
		i := (len(s)*p + 99) / 100
		return s[max(i-1, 0)]
	}
	return Stats{N: len(s), P50: rank(50), P99: rank(99), Max: s[len(s)-1]}
}

func (s Stats) String() string {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return fmt.Sprintf("n=%d p50=%.2fms p99=%.2fms max=%.2fms", s.N, ms(s.P50), ms(s.P99), ms(s.Max))
}
