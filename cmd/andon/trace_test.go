package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/andonhq/andon/internal/otlptest"
	"github.com/andonhq/andon/mcp/mcptest"
)

// traceTreeEnv, if set, names a file that TestServeExportsACancelledRunsTrace
// writes the cancelled run's trace to, as a text tree (docs/tracing.md
// shows one).
const traceTreeEnv = "ANDON_TRACE_TREE"

// andon serve, pointed at an OTLP endpoint by the standard environment,
// exports the trace of a run cancelled mid-call over the real OTLP/HTTP
// wire: the receiver decodes the protobuf and finds the run's span, its
// tool call's, the MCP request's with the wire's cancel events, and the
// cancel's own span with its events; the MCP server got the request's
// traceparent in _meta.
func TestServeExportsACancelledRunsTrace(t *testing.T) {
	t.Parallel()
	recv, err := otlptest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer recv.Close()
	dir := t.TempDir()
	rec := filepath.Join(dir, "records.jsonl")
	writeScript(t, dir, "andon.yaml", testConfig(rec, false))
	env := append(processEnv(t), "OTEL_EXPORTER_OTLP_ENDPOINT="+recv.Endpoint(), "OTEL_SERVICE_NAME=andon-e2e",
		"OTEL_BSP_SCHEDULE_DELAY=50")
	serve, addr := startServeAPI(t, dir, env)
	slow := writeScript(t, dir, "slow.yaml", slowScriptYAML)
	r := runAndonIn(t, dir, "run", "--api", addr, "--script", slow)
	r.check(t, exitOK)
	id := strings.TrimSpace(r.stdout)
	waitForRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted && r.Tool == "slow" })
	runAndonIn(t, dir, "cancel", "--api", addr, id).check(t, exitOK)
	checkSlowCallCancelled(t, rec)
	serve.stop() // flushes what is left

	if errs := recv.Errors(); len(errs) > 0 {
		t.Fatalf("exports the receiver could not decode: %v", errs)
	}
	spans := recv.Spans()
	byName := func(name string) otlptest.Span {
		t.Helper()
		for _, s := range spans {
			if s.Name == name && (s.Attributes["andon.run.id"] == id || s.Attributes["andon.run.id"] == "") {
				return s
			}
		}
		t.Fatalf("no span %q arrived; got %s", name, names(spans))
		return otlptest.Span{}
	}
	run := byName("invoke_agent")
	tool := byName("execute_tool mcp_e2e_slow")
	call := byName("tools/call slow")
	cancel := byName("cancel run")
	if run.Service != "andon-e2e" {
		t.Errorf("service.name = %q, want andon-e2e (OTEL_SERVICE_NAME)", run.Service)
	}
	if tool.ParentSpanID != run.SpanID || call.ParentSpanID != tool.SpanID || call.TraceID != run.TraceID {
		t.Errorf("the tree is not run → tool call → tools/call: %+v / %+v / %+v", run, tool, call)
	}
	if got := eventNames(cancel); !slices.Equal(got, []string{"andon.cancel.requested", "andon.cancel.row_written", "andon.cancel.signal"}) {
		t.Errorf("cancel span events = %q", got)
	}
	if cancel.Attributes["andon.cancel.cause"] != "operator" || cancel.Attributes["andon.run.id"] != id {
		t.Errorf("cancel span attributes = %v", cancel.Attributes)
	}
	if got := eventNames(call); !slices.Contains(got, "mcp.cancel") || !slices.Contains(got, "mcp.cancel.sent") {
		t.Errorf("tools/call span events = %q, want mcp.cancel and mcp.cancel.sent", got)
	}
	for _, s := range []otlptest.Span{run, tool, call} {
		if s.Attributes["andon.outcome"] != "cancelled" || s.StatusCode == 2 /* error */ {
			t.Errorf("span %q: outcome %q, status %v; want cancelled, not an error", s.Name, s.Attributes["andon.outcome"], s.StatusCode)
		}
	}
	recs, _ := mcptest.ReadRecords(rec)
	var tp string
	for _, r := range recs {
		if r.Kind == mcptest.Received && r.Method == "tools/call" {
			var p struct {
				Meta struct {
					Traceparent string `json:"traceparent"`
				} `json:"_meta"`
			}
			_ = json.Unmarshal(r.Params, &p)
			tp = p.Meta.Traceparent
		}
	}
	if want := "00-" + call.TraceID + "-" + call.SpanID + "-01"; tp != want {
		t.Errorf("the server got traceparent %q, want %q", tp, want)
	}
	if path := os.Getenv(traceTreeEnv); path != "" {
		if err := os.WriteFile(path, []byte(traceTree(spans, run.TraceID, cancel.TraceID)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Across processes: a run submitted on serve, whose worker is killed mid
// call, resumed by another worker and cancelled from serve while that one
// holds it, is one trace. The resumed segment's span is a child of the
// submission's span (the run row keeps its traceparent), and it links to
// the span of the cancel made on serve (the row keeps that one too), on
// which the row's write is an event; the worker's MCP request carries the
// same trace to the server.
func TestTraceAcrossProcesses(t *testing.T) {
	t.Parallel()
	recv, err := otlptest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer recv.Close()
	dir := t.TempDir()
	rec := filepath.Join(dir, "records.jsonl")
	configPath := writeScript(t, dir, "andon.yaml", testConfig(rec, false)+"    effects: {slow: read_only}\n")
	base := append(processEnv(t), "OTEL_EXPORTER_OTLP_ENDPOINT="+recv.Endpoint(), "OTEL_BSP_SCHEDULE_DELAY=50")
	serveEnv := append(slices.Clone(base), "OTEL_SERVICE_NAME=andon-serve")
	workerEnv := append(slices.Clone(base), "OTEL_SERVICE_NAME=andon-worker")
	common := []string{"--db", filepath.Join(dir, "andon.db"), "--config", configPath, "--lease", "2s", "--reap-interval", "200ms"}

	doomed := startAndon(t, dir, workerEnv, append([]string{"worker"}, common...)...)
	doomed.waitOutput("its banner", contains("andon: worker executing"))
	serve, addr := startServeAPI(t, dir, serveEnv, append(common, "--workers", "0")...)
	slow := writeScript(t, dir, "slow.yaml", slowScriptYAML)
	r := runAndonIn(t, dir, "run", "--api", addr, "--script", slow)
	r.check(t, exitOK)
	id := strings.TrimSpace(r.stdout)
	waitForRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted && r.Tool == "slow" })
	if err := doomed.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-doomed.exited

	rescuer := startAndon(t, dir, workerEnv, append([]string{"worker"}, common...)...)
	waitForRecord(t, rec, func(r mcptest.Record) bool {
		return r.Kind == mcptest.ToolStarted && r.Tool == "slow" && countStarted(rec) >= 2
	})
	runAndonIn(t, dir, "cancel", "--api", addr, id).check(t, exitOK)
	waitForRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolCancelled && r.Tool == "slow" })
	ctx, cancel := context.WithTimeout(t.Context(), 2*patience)
	defer cancel()
	// The resumed segment's span ends once its cancelled call is recorded.
	resumed, err := recv.WaitFor(ctx, func(s otlptest.Span) bool {
		return s.Name == "invoke_agent" && s.Attributes["andon.run.id"] == id && s.Attributes["andon.run.attempt"] == "2"
	})
	if err != nil {
		t.Fatal(err)
	}
	rescuer.stop()
	serve.stop()

	spans := recv.Spans()
	find := func(what string, match func(otlptest.Span) bool) otlptest.Span {
		t.Helper()
		for _, s := range spans {
			if match(s) {
				return s
			}
		}
		t.Fatalf("no %s arrived; got %s", what, names(spans))
		return otlptest.Span{}
	}
	submit := find("submit span", func(s otlptest.Span) bool { return s.Name == "submit run" && s.Attributes["andon.run.id"] == id })
	cancelSpan := find("cancel span", func(s otlptest.Span) bool { return s.Name == "cancel run" && s.Attributes["andon.run.id"] == id })
	if submit.Service != "andon-serve" || cancelSpan.Service != "andon-serve" || resumed.Service != "andon-worker" {
		t.Errorf("services: submit %q, cancel %q, resumed segment %q; want serve, serve, worker", submit.Service, cancelSpan.Service, resumed.Service)
	}
	if resumed.TraceID != submit.TraceID || resumed.ParentSpanID != submit.SpanID {
		t.Errorf("the resumed segment (trace %s, parent %s) does not continue the submission's trace (%s, span %s)",
			resumed.TraceID, resumed.ParentSpanID, submit.TraceID, submit.SpanID)
	}
	if !slices.Contains(resumed.Links, cancelSpan.SpanID) {
		t.Errorf("the resumed segment's links %q do not name the cancel's span %s", resumed.Links, cancelSpan.SpanID)
	}
	if resumed.Attributes["andon.outcome"] != "cancelled" || !slices.Contains(eventNames(resumed), "andon.cancel.signal") {
		t.Errorf("the resumed segment: outcome %q, events %q; want cancelled, with the signal", resumed.Attributes["andon.outcome"], eventNames(resumed))
	}
	if !slices.Contains(eventNames(cancelSpan), "andon.cancel.row_written") {
		t.Errorf("the cancel's events %q lack the row's write", eventNames(cancelSpan))
	}
	call := find("resumed MCP request", func(s otlptest.Span) bool {
		return s.Name == "tools/call slow" && s.TraceID == submit.TraceID && s.Service == "andon-worker" && slices.Contains(eventNames(s), "mcp.cancel.sent")
	})
	_ = call
	if path := os.Getenv(traceTreeEnv); path != "" {
		if err := os.WriteFile(path+".across", []byte(traceTree(spans, submit.TraceID, cancelSpan.TraceID)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// countStarted counts the slow tool's starts in a record file.
func countStarted(rec string) int {
	recs, _ := mcptest.ReadRecords(rec)
	n := 0
	for _, r := range recs {
		if r.Kind == mcptest.ToolStarted && r.Tool == "slow" {
			n++
		}
	}
	return n
}

func names(spans []otlptest.Span) string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return fmt.Sprintf("%q", out)
}

func eventNames(s otlptest.Span) []string {
	var out []string
	for _, e := range s.Events {
		out = append(out, e.Name)
	}
	return out
}

// traceTree renders the spans of the given traces as an indented tree,
// times relative to the first span's start, with each span's events and
// its andon.* and mcp.* attributes.
func traceTree(spans []otlptest.Span, traceIDs ...string) string {
	var in []otlptest.Span
	for _, s := range spans {
		if slices.Contains(traceIDs, s.TraceID) {
			in = append(in, s)
		}
	}
	sort.Slice(in, func(i, j int) bool { return in[i].Start.Before(in[j].Start) })
	if len(in) == 0 {
		return ""
	}
	t0 := in[0].Start
	ms := func(t time.Time) string { return fmt.Sprintf("%8.3f ms", float64(t.Sub(t0).Microseconds())/1000) }
	ids := map[string]bool{}
	for _, s := range in {
		ids[s.SpanID] = true
	}
	var b strings.Builder
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		for _, s := range in {
			root := parent == "" && !ids[s.ParentSpanID]
			if !root && (parent == "" || s.ParentSpanID != parent) {
				continue
			}
			pad := strings.Repeat("  ", depth)
			kind := strings.ToLower(strings.TrimPrefix(s.Kind.String(), "SPAN_KIND_"))
			fmt.Fprintf(&b, "%s %s%s  [%s, %s, %.3f ms]%s\n", ms(s.Start), pad, s.Name, s.Service, kind, float64(s.End.Sub(s.Start).Microseconds())/1000, attrText(s.Attributes))
			for _, e := range s.Events {
				fmt.Fprintf(&b, "%s %s  · %s%s\n", ms(e.Time), pad, e.Name, attrText(e.Attributes))
			}
			if len(s.Links) > 0 {
				fmt.Fprintf(&b, "%11s %s  ↔ linked to %d span(s)\n", "", pad, len(s.Links))
			}
			walk(s.SpanID, depth+1)
		}
	}
	walk("", 0)
	return b.String()
}

func attrText(attrs map[string]string) string {
	var keys []string
	for k := range attrs {
		if strings.HasPrefix(k, "andon.") && k != "andon.run.id" || strings.HasPrefix(k, "mcp.method") || strings.HasPrefix(k, "gen_ai.tool.name") || k == "jsonrpc.request.id" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+attrs[k])
	}
	if len(parts) == 0 {
		return ""
	}
	return " " + strings.Join(parts, " ")
}
