package metrics_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
	"github.com/andonhq/andon/metrics"
)

// BenchmarkMetricsHooks measures what the metrics hooks cost a tool call
// through the catalogue to an mcptest server over an in-process pipe (the
// stdio transport, without a process boundary, so the hooks' share is at
// its largest): "bare" has no hooks, "metrics" has OnCall and OnCancelSent
// feeding a metrics.Metrics. roundtrip is an echo call from Call to its
// return; cancel is a slow call cancelled once the server runs it, timed
// from cancel() to Call's return (waiting for the server is not timed).
func BenchmarkMetricsHooks(b *testing.B) {
	for _, hooked := range []bool{false, true} {
		name := "bare"
		if hooked {
			name = "metrics"
		}
		b.Run(name, func(b *testing.B) {
			srv := mcptest.NewServer(nil)
			defer srv.Close()
			opts := &catalogue.Options{
				Dial: func(context.Context, catalogue.Server) (mcp.Transport, error) { return srv.Transport(), nil },
			}
			if hooked {
				m := metrics.New(nil)
				opts.OnCall = m.ToolCall
				opts.Client = &mcp.ClientOptions{OnCancelSent: m.CancelSent}
			}
			cat, err := catalogue.New(&catalogue.Config{Servers: []catalogue.Server{{Name: "s", Command: []string{"in process"}}}}, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer cat.Close()
			ctx := context.Background()
			echo, err := cat.Lookup(ctx, "mcp_s_echo")
			if err != nil {
				b.Fatal(err)
			}
			slow, _ := cat.Lookup(ctx, "mcp_s_slow")
			echoArgs := json.RawMessage(`{"text":"hello"}`)
			for range 50 { // warm up, untimed
				echo.Call(ctx, echoArgs)
			}

			b.Run("roundtrip", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if res, err := echo.Call(ctx, echoArgs); err != nil || res.Outcome != agent.OutcomeOK {
						b.Fatalf("echo: %v, %v", res, err)
					}
				}
			})
			b.Run("cancel", func(b *testing.B) {
				b.StopTimer()
				started := map[string]bool{} // request ids of slow calls begun
				for range b.N {
					cctx, cancel := context.WithCancel(ctx)
					done := make(chan *agent.ToolResult, 1)
					go func() {
						res, _ := slow.Call(cctx, json.RawMessage(`{"ms":60000}`))
						done <- res
					}()
					wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
					rec, err := srv.WaitFor(wctx, func(r mcptest.Record) bool {
						return r.Kind == mcptest.ToolStarted && r.Tool == "slow" && !started[r.ID]
					})
					wcancel()
					if err != nil {
						b.Fatal(err)
					}
					started[rec.ID] = true
					b.StartTimer()
					cancel()
					res := <-done
					b.StopTimer()
					if res == nil || res.Outcome != agent.OutcomeCancelled {
						b.Fatalf("slow: %v", res)
					}
				}
			})
		})
	}
}

// BenchmarkMetricsHookCost measures the hooks alone: what each call and
// each cancellation pays on top of the work they observe.
func BenchmarkMetricsHookCost(b *testing.B) {
	m := metrics.New(nil)
	b.Run("ToolCall", func(b *testing.B) {
		r := catalogue.CallReport{Server: "s", Tool: "mcp_s_echo", Outcome: agent.OutcomeOK, Took: 3 * time.Millisecond}
		b.ReportAllocs()
		for b.Loop() {
			m.ToolCall(r)
		}
	})
	b.Run("CancelSent", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.CancelSent(mcp.TransportStdio, 300*time.Microsecond)
		}
	})
}
