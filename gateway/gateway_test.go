package gateway_test

import (
	"context"
	"errors"
	"net"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/egress"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
	"github.com/andonhq/andon/node"
	"github.com/andonhq/andon/vault"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// upstream is how the gateway reaches the MCP server behind it.
type upstream struct {
	name     string
	http     bool   // over Streamable HTTP; else a stdio-framed stream
	protocol string // the revision andon's client pins
}

// downstream is how a client reaches the gateway.
type downstream struct {
	name     string
	http     bool
	protocol string
}

var (
	upstreams = []upstream{
		{"stdio 2025-11-25", false, mcp.Version20251125},
		{"stdio 2026-07-28", false, mcp.Version20260728},
		{"http sessions", true, mcp.Version20251125},
		{"http 2026-07-28", true, mcp.Version20260728},
	}
	downstreams = []downstream{
		{"stdio 2025-11-25", false, mcp.Version20251125},
		{"stdio 2026-07-28", false, mcp.Version20260728},
		{"http sessions", true, mcp.Version20250618},
		{"http 2026-07-28", true, mcp.Version20260728},
	}
)

// fixture is a node whose catalogue has one server, s (an mcptest
// server), and the gateway in front of it.
type fixture struct {
	n   *node.Node
	srv *mcptest.Server
}

func newFixture(t *testing.T, up upstream, approval bool) *fixture {
	t.Helper()
	return newTracedFixture(t, up, approval, nil)
}

// newTracedFixture is newFixture with the node traced by tp (nil: not).
func newTracedFixture(t *testing.T, up upstream, approval bool, tp trace.TracerProvider) *fixture {
	t.Helper()
	srv := mcptest.NewServer(nil)
	t.Cleanup(srv.Close)
	s := catalogue.Server{Name: "s", Protocol: up.protocol, RequiresApproval: new(approval),
		Effects: map[string]agent.Effect{"slow": agent.EffectReadOnly, "echo": agent.EffectReadOnly}}
	cfg := &node.Config{DB: filepath.Join(t.TempDir(), "andon.db"), Key: newKey(t),
		Servers:        &catalogue.Config{Servers: []catalogue.Server{s}},
		WatchInterval:  50 * time.Millisecond,
		TracerProvider: tp,
	}
	if up.http {
		hs := httptest.NewServer(srv.HTTPHandler(nil))
		t.Cleanup(hs.Close)
		cfg.Servers.Servers[0].URL = hs.URL
		cfg.Egress = egress.Config{AllowedHosts: []string{"127.0.0.1"}}
	} else {
		cfg.Servers.Servers[0].Command = []string{"in-process"}
		cfg.Dial = func(context.Context, catalogue.Server) (mcp.Transport, error) { return srv.Transport(), nil }
	}
	n, err := node.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- n.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		<-stopped
		n.Close()
	})
	return &fixture{n: n, srv: srv}
}

func newKey(t *testing.T) vault.Key {
	t.Helper()
	k, err := vault.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// connect connects a client to the gateway the way down says.
func (f *fixture) connect(t *testing.T, down downstream, opts *mcp.ClientOptions) *mcp.Client {
	t.Helper()
	gw := f.n.Gateway()
	var tr mcp.Transport
	if down.http {
		hs := httptest.NewServer(gw)
		t.Cleanup(hs.Close)
		tr = mcp.HTTP(hs.URL, hs.Client())
	} else {
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			gw.ServeStream(context.Background(), server, server)
		}()
		t.Cleanup(func() { server.Close(); <-done })
		tr = mcp.Stream(client)
	}
	o := mcp.ClientOptions{}
	if opts != nil {
		o = *opts
	}
	o.ProtocolVersion = down.protocol
	c, err := mcp.Connect(context.Background(), tr, &o)
	if err != nil {
		t.Fatalf("connecting to the gateway: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func (f *fixture) waitFor(t *testing.T, what string, match func(mcptest.Record) bool) mcptest.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := f.srv.WaitFor(ctx, match)
	if err != nil {
		t.Fatalf("upstream: %s: %v", what, err)
	}
	return r
}

// gatewayRun is the one run the gateway made.
func (f *fixture) gatewayRun(t *testing.T) *agent.Run {
	t.Helper()
	runs, err := f.n.Store().RunList(context.Background(), agent.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 {
		t.Fatalf("%d runs, want the gateway's one", len(runs))
	}
	return runs[0]
}

func TestGatewayListsAndCallsTheCataloguesTools(t *testing.T) {
	for _, up := range upstreams {
		for _, down := range downstreams {
			t.Run(up.name+" to "+down.name, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, up, false)
				c := f.connect(t, down, nil)
				tools, err := c.ListTools(t.Context(), nil)
				if err != nil {
					t.Fatal(err)
				}
				found := false
				for _, tool := range tools {
					found = found || tool.Name == "mcp_s_echo"
				}
				if !found {
					t.Fatalf("mcp_s_echo not among %d tools", len(tools))
				}
				res, err := c.CallTool(t.Context(), "mcp_s_echo", map[string]any{"text": "hi"}, nil)
				if err != nil {
					t.Fatal(err)
				}
				// The upstream result as it came: its structured content too.
				if res.Text() != "hi" || !strings.Contains(string(res.StructuredContent), `"text":"hi"`) {
					t.Errorf("result %q, structured %s", res.Text(), res.StructuredContent)
				}
				run := f.gatewayRun(t)
				if run.Status != agent.StatusCompleted || run.Owner != "gateway" {
					t.Errorf("run %s %s owned by %q", run.ID, run.Status, run.Owner)
				}
				if _, err := c.CallTool(t.Context(), "mcp_s_nope", nil, nil); !errors.Is(err, &mcp.RPCError{Code: mcp.CodeInvalidParams}) {
					t.Errorf("unknown tool: %v", err)
				}
			})
		}
	}
}

// TestGatewayTranslatesCancellation is the cancellation matrix: a client's
// cancel, in each downstream form, reaches the upstream server in the form
// its revision needs, and the call's run ends cancelled with its audit row.
func TestGatewayTranslatesCancellation(t *testing.T) {
	for _, up := range upstreams {
		for _, down := range downstreams {
			t.Run(up.name+" to "+down.name, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, up, false)
				c := f.connect(t, down, nil)
				ctx, cancel := context.WithCancel(t.Context())
				errc := make(chan error, 1)
				go func() {
					_, err := c.CallTool(ctx, "mcp_s_slow", map[string]any{"ms": 600000}, nil)
					errc <- err
				}()
				f.waitFor(t, "the call started", func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted && r.Tool == "slow" })
				cancel()
				if err := <-errc; !errors.Is(err, mcp.ErrCancelled) {
					t.Errorf("downstream call: %v, want ErrCancelled", err)
				}
				f.waitFor(t, "the call was cancelled", func(r mcptest.Record) bool { return r.Kind == mcptest.ToolCancelled && r.Tool == "slow" })
				// How upstream was told: notifications/cancelled, or (2026-07-28
				// over HTTP) its response stream closed.
				if up.http && up.protocol == mcp.Version20260728 {
					f.waitFor(t, "the stream closed", func(r mcptest.Record) bool { return r.Kind == mcptest.StreamClosed && r.Method == "tools/call" })
				} else {
					f.waitFor(t, "notifications/cancelled", func(r mcptest.Record) bool {
						return r.Kind == mcptest.Received && r.Method == "notifications/cancelled"
					})
				}
				run := waitRun(t, f, agent.StatusCancelled)
				if row := waitAuditCall(t, f, run.ID); !strings.Contains(row.Reason, "cancelled") {
					t.Errorf("tool_call audit row %+v, want one saying cancelled", row)
				}
			})
		}
	}
}

// TestGatewayOperatorStop: an operator's cancel of a gateway call tells
// the upstream server and answers the client with a result that says an
// operator stopped it.
func TestGatewayOperatorStop(t *testing.T) {
	for _, down := range downstreams {
		t.Run(down.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, upstreams[0], false)
			c := f.connect(t, down, nil)
			type answer struct {
				res *mcp.CallToolResult
				err error
			}
			done := make(chan answer, 1)
			go func() {
				res, err := c.CallTool(t.Context(), "mcp_s_slow", map[string]any{"ms": 600000}, nil)
				done <- answer{res, err}
			}()
			f.waitFor(t, "the call started", func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted && r.Tool == "slow" })
			run := f.gatewayRun(t)
			if err := f.n.Runtime().Cancel(t.Context(), agent.Actor{ID: "alice", Admin: true}, run.ID); err != nil {
				t.Fatal(err)
			}
			f.waitFor(t, "the call was cancelled", func(r mcptest.Record) bool { return r.Kind == mcptest.ToolCancelled && r.Tool == "slow" })
			a := <-done
			if a.err != nil {
				t.Fatalf("downstream call: %v", a.err)
			}
			if !a.res.IsError || !strings.Contains(a.res.Text(), "stopped by an operator") || !strings.Contains(a.res.Text(), run.ID) {
				t.Errorf("result %+v", a.res)
			}
		})
	}
}

func waitRun(t *testing.T, f *fixture, want agent.Status) *agent.Run {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		runs, err := f.n.Store().RunList(context.Background(), agent.RunFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) == 0 && time.Now().Before(deadline) {
			continue // the call has not become a run yet
		}
		run := f.gatewayRun(t)
		if run.Status == want {
			return run
		}
		if run.Status.Terminal() || time.Now().After(deadline) {
			t.Fatalf("run %s is %s (%s: %s), want %s", run.ID, run.Status, run.Reason, run.Error, want)
		}
	}
}

// waitAuditCall waits for the tool_call audit row of run id, written once
// the call has returned.
func waitAuditCall(t *testing.T, f *fixture, id string) audit.Row {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		rows, err := f.n.Audit().List(t.Context(), audit.Query{RunID: id, Action: audit.ActionToolCall})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) > 0 {
			return rows[0]
		}
	}
	t.Fatalf("no tool_call audit row for run %s", id)
	return audit.Row{}
}

// The servers' resources and prompts reach the client too: resources under
// their own URIs, prompts under their local names, with their arguments'
// completions.
func TestGatewayServesResourcesAndPrompts(t *testing.T) {
	for _, down := range downstreams {
		t.Run(down.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, upstreams[0], false)
			c := f.connect(t, down, nil)
			var uris []string
			for r, err := range c.ListResources(t.Context(), nil) {
				if err != nil {
					t.Fatal(err)
				}
				uris = append(uris, r.URI)
			}
			if !slices.Contains(uris, "mcptest://static/hello") {
				t.Fatalf("resources %v", uris)
			}
			res, err := c.ReadResource(t.Context(), "mcptest://static/hello", nil)
			if err != nil || len(res.Contents) != 1 || res.Contents[0].URI != "mcptest://static/hello" || res.Contents[0].Text == "" {
				t.Errorf("read: %+v, %v", res, err)
			}
			notFound := mcp.CodeResourceNotFound
			if down.protocol == mcp.Version20260728 {
				notFound = mcp.CodeInvalidParams // 2026-07-28 must not send -32002
			}
			if _, err := c.ReadResource(t.Context(), "mcptest://nowhere", nil); !errors.Is(err, &mcp.RPCError{Code: int64(notFound)}) {
				t.Errorf("reading an unknown resource: %v, want code %d", err, notFound)
			}
			var prompts []string
			for p, err := range c.ListPrompts(t.Context(), nil) {
				if err != nil {
					t.Fatal(err)
				}
				prompts = append(prompts, p.Name)
			}
			if !slices.Contains(prompts, "mcp_s_greet") {
				t.Fatalf("prompts %v", prompts)
			}
			got, err := c.GetPrompt(t.Context(), "mcp_s_greet", map[string]string{"name": "Ada"}, nil)
			if err != nil || len(got.Messages) == 0 || !strings.Contains(got.Messages[0].Content.Text, "Ada") {
				t.Errorf("prompt: %+v, %v", got, err)
			}
			if _, err := c.GetPrompt(t.Context(), "mcp_s_nope", nil, nil); !errors.Is(err, &mcp.RPCError{Code: mcp.CodeInvalidParams}) {
				t.Errorf("an unknown prompt: %v", err)
			}
			comp, err := c.Complete(t.Context(), mcp.CompleteRequest{Ref: mcp.PromptRef("mcp_s_greet"), Argument: "style", Value: "a p"}, nil)
			if err != nil || !slices.Equal(comp.Values, []string{"a pirate", "a poet"}) {
				t.Errorf("completing a prompt's argument: %+v, %v", comp, err)
			}
		})
	}
}

// Each call through the gateway is counted by server and how it ended:
// andon_gateway_calls_total on the node's metrics.
func TestGatewayCallsAreCounted(t *testing.T) {
	f := newFixture(t, upstreams[0], false)
	c := f.connect(t, downstreams[0], nil)
	if _, err := c.CallTool(t.Context(), "mcp_s_echo", map[string]any{"text": "x"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(t.Context(), "mcp_s_fail", map[string]any{"message": "no"}, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		f.waitFor(t, "the call started", func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted && r.Tool == "slow" })
		cancel()
	}()
	c.CallTool(ctx, "mcp_s_slow", map[string]any{"ms": 600000}, nil)
	want := []string{
		`andon_gateway_calls_total{outcome="ok",server="s"} 1`,
		`andon_gateway_calls_total{outcome="error",server="s"} 1`,
		`andon_gateway_calls_total{outcome="client",server="s"} 1`,
	}
	var body string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		rec := httptest.NewRecorder()
		f.n.Metrics().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		body = rec.Body.String()
		all := true
		for _, w := range want {
			all = all && strings.Contains(body, w)
		}
		if all {
			return
		}
	}
	t.Errorf("metrics lack %q:\n%s", want, grepLines(body, "andon_gateway_calls_total"))
}

func grepLines(s, substr string) string {
	var out []string
	for line := range strings.Lines(s) {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}

// A call of a tool that needs approval waits, as a run does, for an
// operator's decision: approved, the client gets the server's result;
// denied, a result saying an operator refused it, and the server never
// sees the call.
func TestGatewayCallsWaitForApproval(t *testing.T) {
	for _, approve := range []bool{true, false} {
		t.Run(map[bool]string{true: "approved", false: "denied"}[approve], func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, upstreams[0], true)
			c := f.connect(t, downstreams[0], nil)
			done := make(chan *mcp.CallToolResult, 1)
			go func() {
				res, err := c.CallTool(context.Background(), "mcp_s_echo", map[string]any{"text": "approved"}, &mcp.CallOptions{Timeout: time.Hour})
				if err != nil {
					t.Error(err)
				}
				done <- res
			}()
			run := waitRun(t, f, agent.StatusWaitingForApproval)
			decide := f.n.Runtime().Deny
			if approve {
				decide = f.n.Runtime().Approve
			}
			if err := decide(t.Context(), agent.Actor{ID: "alice", Admin: true}, run.ID); err != nil {
				t.Fatal(err)
			}
			res := <-done
			calls := 0
			for _, r := range f.srv.Records() {
				if r.Kind == mcptest.Received && r.Method == "tools/call" {
					calls++
				}
			}
			switch {
			case approve && (res == nil || res.IsError || res.Text() != "approved" || calls != 1):
				t.Errorf("approved: result %+v, %d tools/call upstream, want the echo and one call", res, calls)
			case !approve && (res == nil || !res.IsError || !strings.Contains(res.Text(), "denied") || calls != 0):
				t.Errorf("denied: result %+v, %d tools/call upstream, want a refusal and none", res, calls)
			}
		})
	}
}

// A client's trace goes on through the gateway: the run's spans, and the
// upstream request's, are in the trace of the client's tools/call, on
// every downstream form.
func TestGatewayContinuesTheClientsTrace(t *testing.T) {
	for _, down := range downstreams {
		t.Run(down.name, func(t *testing.T) {
			t.Parallel()
			nodeSpans := tracetest.NewInMemoryExporter()
			ntp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(nodeSpans))
			defer ntp.Shutdown(context.Background())
			f := newTracedFixture(t, upstreams[0], false, ntp)
			clientSpans := tracetest.NewInMemoryExporter()
			ctp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(clientSpans))
			defer ctp.Shutdown(context.Background())
			c := f.connect(t, down, &mcp.ClientOptions{TracerProvider: ctp})
			if _, err := c.CallTool(t.Context(), "mcp_s_echo", map[string]any{"text": "traced"}, nil); err != nil {
				t.Fatal(err)
			}
			var call tracetest.SpanStub
			for _, s := range clientSpans.GetSpans() {
				if strings.HasPrefix(s.Name, "tools/call") {
					call = s
				}
			}
			if !call.SpanContext.IsValid() {
				t.Fatalf("the client traced no tools/call: %d spans", len(clientSpans.GetSpans()))
			}
			waitRun(t, f, agent.StatusCompleted)
			var inTrace, upstreamCall []string
			for _, s := range nodeSpans.GetSpans() {
				if s.SpanContext.TraceID() == call.SpanContext.TraceID() {
					inTrace = append(inTrace, s.Name)
					if strings.HasPrefix(s.Name, "tools/call") {
						upstreamCall = append(upstreamCall, s.Name)
					}
				}
			}
			if len(upstreamCall) != 1 || !slices.ContainsFunc(inTrace, func(n string) bool { return strings.HasPrefix(n, "execute_tool") }) {
				t.Errorf("the node's spans in the client's trace: %v; want the tool call and its upstream tools/call", inTrace)
			}
		})
	}
}
