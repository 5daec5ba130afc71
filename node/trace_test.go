package node_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/egress"
	"github.com/andonhq/andon/mcp/mcptest"
	"github.com/andonhq/andon/node"
)

// The trace of a run an operator cancelled while its tool call was in
// flight, over stdio (a real subprocess) and over HTTP (through egress):
// the span tree run → tool call → MCP request, the cancel's own span with
// its events (requested, row written, signal) linked to the run's, the
// signal on the run's and the call's spans, and the wire's events on the
// MCP request's span; no span of the stop is an error.
func TestTraceOfACancelledRun(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			defer tp.Shutdown(context.Background())
			server := catalogue.Server{Name: "s", RequiresApproval: new(false),
				Effects: map[string]agent.Effect{"slow": agent.EffectReadOnly}}
			var started func() bool
			var egressCfg egress.Config
			switch transport {
			case "stdio":
				exe, err := os.Executable()
				if err != nil {
					t.Fatal(err)
				}
				records := filepath.Join(t.TempDir(), "records.jsonl")
				server.Command = []string{exe, "-record", records}
				server.Env = map[string]string{serveEnv: "1"}
				started = func() bool {
					recs, _ := mcptest.ReadRecords(records)
					return slices.ContainsFunc(recs, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted && r.Tool == "slow" })
				}
			case "http":
				srv := mcptest.NewServer(nil)
				defer srv.Close()
				hs := httptest.NewServer(srv.HTTPHandler(nil))
				defer hs.Close()
				server.URL = hs.URL
				egressCfg.AllowedHosts = []string{"127.0.0.1/32"}
				started = func() bool {
					return slices.ContainsFunc(srv.Records(), func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted && r.Tool == "slow" })
				}
			}
			ctx := context.Background()
			n, err := node.New(ctx, &node.Config{DB: filepath.Join(t.TempDir(), "andon.db"), Key: newKey(t),
				Servers: &catalogue.Config{Servers: []catalogue.Server{server}}, Egress: egressCfg, TracerProvider: tp})
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close()
			runCtx, stop := context.WithCancel(ctx)
			stopped := make(chan error, 1)
			go func() { stopped <- n.Run(runCtx) }()
			defer func() { stop(); <-stopped }()

			run, err := n.Runtime().Submit(ctx, "o", &agent.Request{Prompt: "p", Script: json.RawMessage(`{"steps": [
				{"tool_calls": [{"name": "mcp_s_slow", "arguments": {"ms": 600000}}]}, {"text": "finished"}]}`)})
			if err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(60 * time.Second); !started(); time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the slow call never started")
				}
			}
			if err := n.Runtime().Cancel(ctx, agent.Actor{ID: "o"}, run.ID); err != nil {
				t.Fatal(err)
			}
			waitFor(t, n, run.ID, agent.StatusCancelled)

			runSpan := spanNamed(t, exp, "invoke_agent")
			toolSpan := spanNamed(t, exp, "execute_tool mcp_s_slow")
			mcpSpan := spanNamed(t, exp, "tools/call slow")
			cancelSpan := spanNamed(t, exp, "cancel run")
			chat := spanNamed(t, exp, "chat")
			for _, c := range []struct {
				child, parent tracetest.SpanStub
			}{{chat, runSpan}, {toolSpan, runSpan}, {mcpSpan, toolSpan}} {
				if c.child.Parent.SpanID() != c.parent.SpanContext.SpanID() {
					t.Errorf("span %q's parent is %v, want %q", c.child.Name, c.child.Parent.SpanID(), c.parent.Name)
				}
			}
			if v := attr(runSpan, "andon.run.id"); v != run.ID {
				t.Errorf("run span andon.run.id = %q, want %q", v, run.ID)
			}
			for _, s := range []tracetest.SpanStub{runSpan, toolSpan, mcpSpan, cancelSpan} {
				if s.Status.Code == codes.Error {
					t.Errorf("span %q of a stop has an error status: %+v", s.Name, s.Status)
				}
			}
			for _, s := range []tracetest.SpanStub{runSpan, toolSpan, mcpSpan} {
				if v := attr(s, "andon.outcome"); v != "cancelled" {
					t.Errorf("span %q andon.outcome = %q, want cancelled", s.Name, v)
				}
			}

			// The cancel's span: asked for by an operator, the row, the signal.
			if got, want := eventNames(cancelSpan), []string{"andon.cancel.requested", "andon.cancel.row_written", "andon.cancel.signal"}; !slices.Equal(got, want) {
				t.Errorf("cancel span events = %q, want %q", got, want)
			}
			if v := attr(cancelSpan, "andon.cancel.cause"); v != "operator" {
				t.Errorf("cancel cause = %q, want operator", v)
			}
			if !linksTo(cancelSpan, toolSpan.SpanContext) || !linksTo(toolSpan, cancelSpan.SpanContext) {
				t.Errorf("the cancel's span and the call's are not linked: %v / %v", cancelSpan.Links, toolSpan.Links)
			}
			// The signal reached the run and its call.
			for _, s := range []tracetest.SpanStub{runSpan, toolSpan} {
				if !slices.Contains(eventNames(s), "andon.cancel.signal") {
					t.Errorf("span %q has no andon.cancel.signal event: %q", s.Name, eventNames(s))
				}
			}
			// The wire.
			if got := eventNames(mcpSpan); !slices.Contains(got, "mcp.cancel") || !slices.Contains(got, "mcp.cancel.sent") {
				t.Errorf("MCP span events = %q, want mcp.cancel and mcp.cancel.sent", got)
			}
			// The store's statement of the cancel, and over HTTP the
			// egress request of the call, each a child span.
			if update := spanNamed(t, exp, "UPDATE runs"); update.Parent.SpanID() != cancelSpan.SpanContext.SpanID() || attr(update, "andon.cancel.won") != "true" {
				t.Errorf("the cancel's UPDATE span: parent %v, won %q; want the cancel's child, won", update.Parent.SpanID(), attr(update, "andon.cancel.won"))
			}
			if transport == "http" {
				post := spanNamed(t, exp, "POST")
				found := false
				for _, s := range exp.GetSpans() {
					if s.Name == "POST" && s.Parent.SpanID() == mcpSpan.SpanContext.SpanID() {
						found, post = true, s
					}
				}
				if !found || attr(post, "andon.outcome") != "cancelled" {
					t.Errorf("no egress POST span under the tools/call span, cancelled (got %q)", attr(post, "andon.outcome"))
				}
			}
		})
	}
}

func spanNamed(t *testing.T, exp *tracetest.InMemoryExporter, name string) tracetest.SpanStub {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(5 * time.Millisecond) {
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
	}
}

func attr(s tracetest.SpanStub, key string) string {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value.String()
		}
	}
	return ""
}

func eventNames(s tracetest.SpanStub) []string {
	var out []string
	for _, e := range s.Events {
		out = append(out, e.Name)
	}
	return out
}

func linksTo(s tracetest.SpanStub, to trace.SpanContext) bool {
	return slices.ContainsFunc(s.Links, func(l sdktrace.Link) bool { return l.SpanContext.SpanID() == to.SpanID() })
}
