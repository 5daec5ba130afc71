package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// tracedClient makes a test's client trace into an in-memory exporter.
func tracedClient(exp *tracetest.InMemoryExporter) func(*setupOpts) {
	return func(o *setupOpts) {
		o.client.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	}
}

// endedSpan waits for the span named name to end and returns it. A
// cancelled call's span ends once its signal is out, which may be after
// the call returned. The deadline only keeps a broken test from hanging.
func endedSpan(t *testing.T, exp *tracetest.InMemoryExporter, name string) tracetest.SpanStub {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var names []string
		for _, s := range exp.GetSpans() {
			if s.Name == name {
				return s
			}
			names = append(names, s.Name)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no span %q ended; spans: %q", name, names)
		}
		time.Sleep(time.Millisecond)
	}
}

func attrOf(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value, true
		}
	}
	return attribute.Value{}, false
}

func eventAttrs(e sdktrace.Event) map[string]string {
	m := map[string]string{}
	for _, a := range e.Attributes {
		m[string(a.Key)] = a.Value.String()
	}
	return m
}

// A cancelled tool call's span is a client span under the caller's, named
// and attributed per the MCP semantic conventions; its status is not an
// error, and its events say that it was cancelled, by whom, with which
// signal, and that the signal went out. The server received the span's
// traceparent in _meta, and over HTTP in a header too.
func TestTraceOfACancelledCall(t *testing.T) {
	for _, m := range allModes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			exp := tracetest.NewInMemoryExporter()
			var o setupOpts
			tracedClient(exp)(&o)
			b := setup(t, m, &o)
			caller := sdktrace.NewTracerProvider().Tracer("test")
			ctx, parent := caller.Start(context.Background(), "caller")
			ctx, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			b.cancelWhenStarted("slow", 1, func() { cancel(errors.New("operator stop")) })
			_, err := b.client.CallTool(ctx, "slow", map[string]any{"ms": 30000}, nil)
			parent.End()
			if !errors.Is(err, mcp.ErrCancelled) {
				t.Fatalf("CallTool = %v, want ErrCancelled", err)
			}
			b.assertCancelledOnTheWire(b.toolCallIDs()[0])
			s := endedSpan(t, exp, "tools/call slow")

			if s.SpanKind != trace.SpanKindClient {
				t.Errorf("kind = %v, want client", s.SpanKind)
			}
			if s.Parent.SpanID() != parent.SpanContext().SpanID() || s.SpanContext.TraceID() != parent.SpanContext().TraceID() {
				t.Errorf("span is not a child of the caller's: parent %v, want %v", s.Parent, parent.SpanContext())
			}
			for k, want := range map[string]string{
				"mcp.method.name":       "tools/call",
				"gen_ai.tool.name":      "slow",
				"gen_ai.operation.name": "execute_tool",
				"jsonrpc.request.id":    b.toolCallIDs()[0],
				"mcp.protocol.version":  m.version,
				"andon.outcome":         "cancelled",
			} {
				if v, ok := attrOf(s, k); !ok || v.String() != want {
					t.Errorf("attribute %s = %q, want %q", k, v.String(), want)
				}
			}
			if s.Status.Code == codes.Error {
				t.Errorf("a cancelled call's status is an error: %+v", s.Status)
			}
			signal := "notifications/cancelled"
			if m.modernHTTP() {
				signal = "stream closed"
			}
			var cancelled, sent bool
			for _, e := range s.Events {
				a := eventAttrs(e)
				switch e.Name {
				case "mcp.cancel":
					cancelled = true
					if a["andon.cancel.cause"] != "caller" || a["andon.cancel.reason"] != "operator stop" || a["andon.cancel.signal"] != signal {
						t.Errorf("mcp.cancel event %v: want cause caller, reason \"operator stop\", signal %q", a, signal)
					}
				case "mcp.cancel.sent":
					sent = true
					if _, ok := a["andon.cancel.latency_ms"]; !ok || a["andon.cancel.signal"] != signal {
						t.Errorf("mcp.cancel.sent event %v: want a latency and signal %q", a, signal)
					}
					if !cancelled {
						t.Errorf("mcp.cancel.sent came before mcp.cancel")
					}
				}
			}
			if !cancelled || !sent {
				t.Errorf("events %v: want mcp.cancel and mcp.cancel.sent", s.Events)
			}

			call := b.received("tools/call")[0]
			want := fmt.Sprintf("00-%s-%s-01", s.SpanContext.TraceID(), s.SpanContext.SpanID())
			var tp string
			_ = json.Unmarshal(field(t, call.Params, "_meta.traceparent"), &tp)
			if tp != want {
				t.Errorf("_meta.traceparent = %q, want %q (params %s)", tp, want, call.Params)
			}
			if m.http != nil {
				if got := call.Header.Get("Traceparent"); got != want {
					t.Errorf("traceparent header = %q, want %q", got, want)
				}
			}
		})
	}
}

// A call that times out has the deadline as its cause, and an error status.
func TestTraceOfATimedOutCall(t *testing.T) {
	for _, m := range []mode{inproc2025, http2026} {
		t.Run(m.name+"/deadline", func(t *testing.T) {
			t.Parallel()
			exp := tracetest.NewInMemoryExporter()
			var o setupOpts
			tracedClient(exp)(&o)
			b := setup(t, m, &o)
			ctx, cancel := context.WithTimeout(context.Background(), 24*time.Hour)
			defer cancel()
			_, err := b.client.CallTool(ctx, "slow", map[string]any{"ms": 30000}, &mcp.CallOptions{Timeout: 50 * time.Millisecond})
			if !errors.Is(err, mcp.ErrTimeout) {
				t.Fatalf("CallTool = %v, want ErrTimeout", err)
			}
			s := endedSpan(t, exp, "tools/call slow")
			if s.Status.Code != codes.Error {
				t.Errorf("a timed-out call's status = %+v, want an error", s.Status)
			}
			var cause string
			for _, e := range s.Events {
				if e.Name == "mcp.cancel" {
					cause = eventAttrs(e)["andon.cancel.cause"]
				}
			}
			if cause != "timeout" {
				t.Errorf("mcp.cancel cause = %q, want timeout", cause)
			}
		})
	}
}

// Without a TracerProvider nothing is propagated: no traceparent reaches
// the server, even when the caller's context has a span.
func TestNoTracerProviderPropagatesNothing(t *testing.T) {
	run(t, []mode{inproc2026, http2026, http2025}, func(t *testing.T, b *testBundle) {
		ctx, span := sdktrace.NewTracerProvider().Tracer("test").Start(context.Background(), "caller")
		defer span.End()
		if _, err := b.client.CallTool(ctx, "echo", map[string]any{"text": "hi"}, nil); err != nil {
			t.Fatal(err)
		}
		for _, r := range b.records() {
			if r.Kind != mcptest.Received {
				continue
			}
			if strings.Contains(string(r.Params), "traceparent") || r.Header.Get("Traceparent") != "" {
				t.Errorf("%s carried a trace context without a TracerProvider: %s %v", r.Method, r.Params, r.Header)
			}
		}
	})
}
