package mcp_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// BenchmarkTaskCancelToWire measures how long a cancelled call that became
// a task takes to reach the server as tasks/cancel: timed from just before
// cancel() (called inside OnTaskCreated, so the task exists and the call is
// following it) to the At of mcptest's task_cancel_requested record for
// that task, which the server writes when it has read the tasks/cancel
// (read once the client has its answer).
// Client and server share the process (a pipe, or loopback HTTP); the
// task's pollInterval is a minute, so no poll is in the way. Every
// iteration checks that the call returned ErrCancelled.
func BenchmarkTaskCancelToWire(b *testing.B) {
	for _, bm := range []struct {
		name    string
		version string
		http    *mcptest.HTTPOptions
	}{
		{"pipe/2026-07-28", mcp.Version20260728, nil},
		{"pipe/2025-11-25", mcp.Version20251125, nil},
		{"http/2026-07-28", mcp.Version20260728, &mcptest.HTTPOptions{}},
		{"http/2025-11-25", mcp.Version20251125, &mcptest.HTTPOptions{}},
	} {
		b.Run(bm.name, func(b *testing.B) {
			s := mcptest.NewServer(&mcptest.Options{Tasks: true})
			defer s.Close()
			tr := s.Transport()
			if bm.http != nil {
				hs := httptest.NewServer(s.HTTPHandler(bm.http))
				defer hs.Close()
				tr = &mcp.HTTPTransport{URL: hs.URL, Client: hs.Client()}
			}
			ctx := context.Background()
			// The tasks/cancel's answer is in once OnCancelSent runs: the
			// server has recorded it by then, and the benchmark reads its
			// record once instead of spinning on the recorder.
			acked := make(chan struct{}, 1)
			c, err := mcp.Connect(ctx, tr, &mcp.ClientOptions{ProtocolVersion: bm.version, OnCancelSent: func(string, time.Duration) { acked <- struct{}{} }})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			args := map[string]any{"poll_ms": 60000}
			var d []time.Duration
			b.ResetTimer()
			for b.Loop() {
				callCtx, cancel := context.WithCancel(ctx)
				var id string
				var start time.Time
				_, err := c.CallTool(callCtx, "task_wait", args, &mcp.CallOptions{Timeout: time.Minute, OnTaskCreated: func(t mcp.Task) error {
					id = t.ID
					start = time.Now()
					cancel()
					return nil
				}})
				if !errors.Is(err, mcp.ErrCancelled) {
					b.Fatalf("CallTool: %v, want ErrCancelled", err)
				}
				select {
				case <-acked:
				case <-time.After(30 * time.Second):
					b.Fatal("tasks/cancel was never acknowledged")
				}
				recs := s.Records()
				i := slices.IndexFunc(recs, func(r mcptest.Record) bool {
					return r.Kind == mcptest.TaskCancelRequested && r.Task == id
				})
				if i < 0 {
					b.Fatalf("the server recorded no tasks/cancel for %s", id)
				}
				d = append(d, recs[i].At.Sub(start))
			}
			b.StopTimer()
			slices.Sort(d)
			at := func(p float64) float64 { return float64(d[int(p*float64(len(d)-1))].Nanoseconds()) / 1e3 }
			b.ReportMetric(at(0.50), "p50-µs")
			b.ReportMetric(at(0.99), "p99-µs")
		})
	}
}
