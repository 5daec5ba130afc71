package mcp_test

import (
	"context"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// BenchmarkTracingRoundTrip measures a call of the echo tool with tracing
// off (no TracerProvider: what every andon process runs when no OTEL_*
// endpoint is set), on and sampled (the SDK with a batch processor to an
// exporter that drops the spans: the cost of making and handing off
// spans, without the network), and on but not sampled (never_sample),
// over stdio (a subprocess) and over HTTP (loopback), in the same run.
// cpu-µs/op is the process's CPU time per call, less disturbed than wall
// time by whatever else the machine runs.
func BenchmarkTracingRoundTrip(b *testing.B) {
	providers := []struct {
		name string
		tp   func() trace.TracerProvider
	}{
		{"off", func() trace.TracerProvider { return nil }},
		{"on", func() trace.TracerProvider {
			return sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		}},
		{"unsampled", func() trace.TracerProvider {
			return sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()), sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		}},
	}
	transports := []struct {
		name string
		make func(b *testing.B) mcp.Transport
	}{
		{"stdio", func(b *testing.B) mcp.Transport { return serverCommand(b) }},
		{"http", func(b *testing.B) mcp.Transport {
			s := mcptest.NewServer(nil)
			b.Cleanup(s.Close)
			hs := httptest.NewServer(s.HTTPHandler(nil))
			b.Cleanup(hs.Close)
			return &mcp.HTTPTransport{URL: hs.URL, Client: hs.Client()}
		}},
	}
	args := map[string]any{"text": "hello"}
	for _, tr := range transports {
		for _, p := range providers {
			b.Run(tr.name+"/"+p.name, func(b *testing.B) {
				tp := p.tp()
				if sdk, ok := tp.(*sdktrace.TracerProvider); ok {
					b.Cleanup(func() { sdk.Shutdown(context.Background()) })
				}
				c, err := mcp.Connect(context.Background(), tr.make(b), &mcp.ClientOptions{ProtocolVersion: mcp.Version20251125, TracerProvider: tp})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { c.Close() })
				ctx := context.Background()
				for range 20 {
					if _, err := c.CallTool(ctx, "echo", args, nil); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportAllocs()
				cpu := processCPU()
				b.ResetTimer()
				for range b.N {
					if _, err := c.CallTool(ctx, "echo", args, nil); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				// Over stdio the server is another process: this is the
				// client's CPU alone (over HTTP, the server's too).
				b.ReportMetric(float64((processCPU()-cpu).Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
			})
		}
	}
}
