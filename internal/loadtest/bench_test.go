package loadtest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/andonhq/andon/internal/loadtest"
)

// BenchmarkCancelStorm holds runs in flight and cancels them in waves: the
// harness's measurement as go test entry points (cmd/andon-load prints the
// same for more sizes). Each iteration is a whole Measure; run it once:
//
//	go test -run '^$' -bench CancelStorm -benchtime 1x ./internal/loadtest/
//	ANDON_TEST_POSTGRES=… go test -run '^$' -bench 'CancelStorm/postgres' -benchtime 1x ./internal/loadtest/
func BenchmarkCancelStorm(b *testing.B) {
	for _, backend := range []string{"sqlite", "postgres"} {
		for _, transport := range []string{loadtest.Stdio, loadtest.HTTP} {
			for _, s := range []loadtest.Storm{
				{InFlight: 100, Wave: 1, Samples: 100},
				{InFlight: 100, Wave: 16, Samples: 96},
				{InFlight: 1000, Wave: 100, Samples: 200},
			} {
				name := fmt.Sprintf("%s/%s/inflight=%d/wave=%d", backend, transport, s.InFlight, s.Wave)
				b.Run(name, func(b *testing.B) {
					h := start(b, database(b, backend), transport)
					ctx, cancel := context.WithTimeout(b.Context(), 30*time.Minute)
					defer cancel()
					var res *loadtest.Result
					for b.Loop() {
						var err error
						if res, err = h.Measure(ctx, s); err != nil {
							b.Fatal(err)
						}
					}
					ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
					b.ReportMetric(ms(res.ToWire.P50), "wire-p50-ms")
					b.ReportMetric(ms(res.ToWire.P99), "wire-p99-ms")
					b.ReportMetric(ms(res.ToWire.Max), "wire-max-ms")
					b.ReportMetric(ms(res.ToStopped.P99), "stopped-p99-ms")
					b.ReportMetric(ms(res.Took.P99), "took-p99-ms")
					b.ReportMetric(res.PerCancel, "stmts/cancel")
					b.ReportMetric(res.HeapPerRun+res.StackPerRun, "B/run")
					b.ReportMetric(res.GoroutinesPerRun, "goroutines/run")
				})
			}
		}
	}
}

// BenchmarkShortRuns measures one-tool-call runs per second with the
// node's default workers, and the store's statements per run.
func BenchmarkShortRuns(b *testing.B) {
	for _, backend := range []string{"sqlite", "postgres"} {
		b.Run(backend, func(b *testing.B) {
			h := startWorkers(b, database(b, backend), loadtest.Stdio, 0)
			ctx, cancel := context.WithTimeout(b.Context(), 30*time.Minute)
			defer cancel()
			if _, err := h.ShortRuns(ctx, 1, 1); err != nil { // the server starts
				b.Fatal(err)
			}
			var tp *loadtest.Throughput
			for b.Loop() {
				var err error
				if tp, err = h.ShortRuns(ctx, 300, 16); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(tp.PerSecond, "runs/s")
			b.ReportMetric(tp.PerRun, "stmts/run")
			b.ReportMetric(tp.WritesPerRun, "writes/run")
		})
	}
}
