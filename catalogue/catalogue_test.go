package catalogue_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// fixture is a catalogue whose servers are all served, in this process, by
// one mcptest server: each connection is a net.Pipe whose server end the
// test can cut, as if the server had died.
type fixture struct {
	t     *testing.T
	srv   *mcptest.Server
	cat   *catalogue.Catalogue
	logs  *logCapture
	dials atomic.Int32

	// hook, if set, dials instead of the fixture; next is the fixture's
	// own dialler.
	hook atomic.Pointer[dialHook]

	mu   sync.Mutex
	ends []net.Conn // the server ends, in dial order
	wg   sync.WaitGroup
}

type dialHook func(ctx context.Context, s catalogue.Server, next func() (mcp.Transport, error)) (mcp.Transport, error)

// intercept makes h dial from now on.
func (f *fixture) intercept(h dialHook) { f.hook.Store(&h) }

func newFixture(t *testing.T, servers []catalogue.Server, sopts *mcptest.Options, opts *catalogue.Options) *fixture {
	t.Helper()
	f := &fixture{t: t, srv: mcptest.NewServer(sopts), logs: newLogCapture()}
	var o catalogue.Options
	if opts != nil {
		o = *opts
	}
	o.Logger = slog.New(f.logs)
	o.Dial = f.dial
	cat, err := catalogue.New(&catalogue.Config{Servers: servers}, &o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	f.cat = cat
	t.Cleanup(func() {
		if err := cat.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		f.srv.Close()
		f.wg.Wait()
	})
	return f
}

func (f *fixture) dial(ctx context.Context, s catalogue.Server) (mcp.Transport, error) {
	if h := f.hook.Load(); h != nil {
		return (*h)(ctx, s, func() (mcp.Transport, error) { return f.pipe(ctx, s) })
	}
	return f.pipe(ctx, s)
}

func (f *fixture) pipe(ctx context.Context, s catalogue.Server) (mcp.Transport, error) {
	f.dials.Add(1)
	client, server := net.Pipe()
	f.mu.Lock()
	f.ends = append(f.ends, server)
	f.mu.Unlock()
	f.wg.Go(func() {
		f.srv.Serve(context.Background(), server, server)
		server.Close()
	})
	return mcp.Stream(client), nil
}

// cut ends the server side of the newest connection, as a crash would.
func (f *fixture) cut() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ends[len(f.ends)-1].Close()
}

func (f *fixture) tool(name string) *catalogue.Tool {
	f.t.Helper()
	tool, err := f.cat.Lookup(context.Background(), name)
	if err != nil {
		f.t.Fatalf("Lookup(%q): %v", name, err)
	}
	if tool == nil {
		f.t.Fatalf("no tool %q", name)
	}
	return tool
}

func (f *fixture) call(ctx context.Context, name, args string) (*agent.ToolResult, error) {
	f.t.Helper()
	var raw json.RawMessage
	if args != "" {
		raw = json.RawMessage(args)
	}
	return f.tool(name).Call(ctx, raw)
}

// toolCalls returns the tools/call requests the server received for the
// tool called name.
func toolCalls(recs []mcptest.Record, name string) []mcptest.Record {
	var out []mcptest.Record
	for _, r := range recs {
		if r.Kind != mcptest.Received || r.Method != "tools/call" {
			continue
		}
		var p struct {
			Name string `json:"name"`
		}
		json.Unmarshal(r.Params, &p)
		if p.Name == name {
			out = append(out, r)
		}
	}
	return out
}

func wantResult(t *testing.T, res *agent.ToolResult, err error, outcome agent.Outcome, text string) {
	t.Helper()
	if err != nil {
		t.Fatalf("Call: error %v, want a result with outcome %s", err, outcome)
	}
	if res.Outcome != outcome || !strings.Contains(res.Text, text) {
		t.Fatalf("Call = {%s %.200q}, want outcome %s and text containing %q", res.Outcome, res.Text, outcome, text)
	}
}

func ptr[T any](v T) *T { return &v }

// stdio stands in for a command in servers that the fixture dials itself.
var stdio = []string{"mcptest"}

func TestImportNamesAndEffects(t *testing.T) {
	f := newFixture(t, []catalogue.Server{
		{Name: "a", Command: stdio, TrustAnnotations: true,
			Effects: map[string]agent.Effect{"slow": agent.EffectIdempotentWrite, "crash": agent.EffectReadOnly, "unheard_of": agent.EffectReadOnly}},
		{Name: "b-2", Command: stdio, RequiresApproval: ptr(false)},
		{Name: "off", Command: stdio, Enabled: ptr(false)},
	}, &mcptest.Options{PageSize: 3}, nil)

	tools, err := f.cat.List(context.Background())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	// Every tool of both enabled servers, across tools/list pages, in
	// order; nothing of the disabled one.
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Spec().Name)
	}
	remote := []string{"echo", "slow", "stubborn", "progress", "late", "fail", "big", "ask", "crash", "garbage", "split", "unknown_id", "bad_result", "stderr", "route"}
	var want []string
	for _, s := range []string{"a", "b-2"} {
		for _, r := range remote {
			want = append(want, "mcp_"+s+"_"+r)
		}
	}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("tools =\n%s\nwant\n%s", strings.Join(names, " "), strings.Join(want, " "))
	}
	if got := len(f.srv.ReceivedMessages("tools/list")); got < 10 {
		t.Errorf("server received %d tools/list, want one per page of 3 per server", got)
	}
	if n := f.dials.Load(); n != 2 {
		t.Errorf("dialled %d times, want 2 (one per enabled server)", n)
	}

	for _, c := range []struct {
		name     string
		effect   agent.Effect
		approval bool
	}{
		{"mcp_a_echo", agent.EffectReadOnly, true},               // trusted annotation: readOnlyHint
		{"mcp_a_slow", agent.EffectIdempotentWrite, true},        // operator
		{"mcp_a_crash", agent.EffectReadOnly, true},              // operator
		{"mcp_a_fail", agent.EffectNonIdempotentWrite, true},     // default
		{"mcp_b-2_echo", agent.EffectNonIdempotentWrite, false},  // untrusted annotation: ignored
		{"mcp_b-2_slow", agent.EffectNonIdempotentWrite, false},  // default
		{"mcp_b-2_crash", agent.EffectNonIdempotentWrite, false}, // default
	} {
		tool := f.tool(c.name)
		if tool.Effect() != c.effect || tool.RequiresApproval() != c.approval {
			t.Errorf("%s: effect %s, approval %v; want %s, %v", c.name, tool.Effect(), tool.RequiresApproval(), c.effect, c.approval)
		}
	}

	echo := f.tool("mcp_a_echo")
	spec := echo.Spec()
	if spec.Description != "Returns its text." || !strings.Contains(string(spec.InputSchema), `"text"`) {
		t.Errorf("spec = %+v", spec)
	}
	if echo.Server() != "a" || echo.Remote().Name != "echo" {
		t.Errorf("Server, Remote = %q, %q", echo.Server(), echo.Remote().Name)
	}
	if !f.logs.has("catalogue: effects names a tool the server does not offer") {
		t.Error("no warning about the effect of a tool the server does not offer")
	}

	// An unknown name is nil, and a nil interface, not a typed nil.
	if tool, err := f.cat.Tool(context.Background(), "mcp_a_nope"); tool != nil || err != nil {
		t.Errorf("Tool(unknown) = %v, %v; want nil, nil", tool, err)
	}
	// Listing again imports nothing again.
	before := len(f.srv.ReceivedMessages("tools/list"))
	if _, err := f.cat.List(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := len(f.srv.ReceivedMessages("tools/list")); after != before {
		t.Errorf("a second List sent %d more tools/list", after-before)
	}
}

func TestCallOutcomes(t *testing.T) {
	f := newFixture(t, []catalogue.Server{{Name: "s", Command: stdio}}, nil, &catalogue.Options{MaxResultBytes: 1000})
	ctx := context.Background()

	res, err := f.call(ctx, "mcp_s_echo", `{"text":"hello"}`)
	wantResult(t, res, err, agent.OutcomeOK, "hello")
	if res.Text != "hello" {
		t.Errorf("echo text = %q, want hello", res.Text)
	}

	res, err = f.call(ctx, "mcp_s_fail", `{"message":"no such ticket"}`)
	wantResult(t, res, err, agent.OutcomeError, "no such ticket")

	// A tool without arguments.
	res, err = f.call(ctx, "mcp_s_split", "")
	wantResult(t, res, err, agent.OutcomeOK, "split answer")

	// Long text is cut for the model, on a character boundary, with a note.
	res, err = f.call(ctx, "mcp_s_big", `{"bytes":100000}`)
	wantResult(t, res, err, agent.OutcomeOK, "[andon: the result was cut to its first 1000 of 100000 bytes]")
	if len(res.Text) > 1100 {
		t.Errorf("big result is %d bytes long", len(res.Text))
	}

	// Arguments that are not an object: a result the model can learn
	// from, and nothing sent.
	sent := len(f.srv.ReceivedMessages("tools/call"))
	res, err = f.call(ctx, "mcp_s_echo", `["hello"]`)
	wantResult(t, res, err, agent.OutcomeError, "must be a JSON object")
	if got := len(f.srv.ReceivedMessages("tools/call")); got != sent {
		t.Errorf("invalid arguments were sent")
	}

	// A server that refuses the request: an error (the runtime records
	// the call as failed).
	if _, err := f.call(ctx, "mcp_s_bad_result", ""); err == nil {
		t.Error("a malformed result is not an error")
	}
}

// A cancelled call is its own outcome: a result, not an error; the server
// is told (notifications/cancelled on stdio) and stops; the connection
// stays usable.
func TestCancelSlowCall(t *testing.T) {
	f := newFixture(t, []catalogue.Server{{Name: "s", Command: stdio}}, nil, nil)
	f.tool("mcp_s_slow") // import first: the call below is the only one in flight

	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		f.srv.WaitFor(context.Background(), func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted && r.Tool == "slow" })
		cancel(agent.ErrRunCancelled)
	}()
	start := time.Now()
	res, err := f.call(ctx, "mcp_s_slow", `{"ms":60000}`)
	wantResult(t, res, err, agent.OutcomeCancelled, `The call to tool "slow" on server "s" was cancelled.`)
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("the cancelled call took %v", took)
	}

	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if _, err := f.srv.WaitFor(wctx, func(r mcptest.Record) bool {
		return r.Kind == mcptest.Received && r.Method == "notifications/cancelled"
	}); err != nil {
		t.Fatalf("the server never received notifications/cancelled: %v", err)
	}
	if _, err := f.srv.WaitFor(wctx, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolCancelled && r.Tool == "slow" }); err != nil {
		t.Fatalf("the slow tool never saw the cancellation: %v", err)
	}

	res, err = f.call(context.Background(), "mcp_s_echo", `{"text":"still here"}`)
	wantResult(t, res, err, agent.OutcomeOK, "still here")
	if n := f.dials.Load(); n != 1 {
		t.Errorf("dialled %d times, want 1: a cancel must not cost the connection", n)
	}
}

// A call whose context is already cancelled sends nothing.
func TestCancelledBeforeCall(t *testing.T) {
	f := newFixture(t, []catalogue.Server{{Name: "s", Command: stdio}}, nil, nil)
	tool := f.tool("mcp_s_slow")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := tool.Call(ctx, json.RawMessage(`{"ms":1}`))
	wantResult(t, res, err, agent.OutcomeCancelled, "was cancelled")
	if n := len(f.srv.ReceivedMessages("tools/call")); n != 0 {
		t.Errorf("the server received %d tools/call", n)
	}
}

func TestTimeout(t *testing.T) {
	f := newFixture(t, []catalogue.Server{{Name: "s", Command: stdio,
		Tools: map[string]catalogue.ToolConfig{"slow": {Budget: catalogue.Budget{Timeout: 200 * time.Millisecond}}}}}, nil, nil)
	tool := f.tool("mcp_s_slow")

	// The context's deadline, sooner than the budget: the call timed out,
	// in the call itself.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	res, err := tool.Call(ctx, json.RawMessage(`{"ms":60000}`))
	wantResult(t, res, err, agent.OutcomeFailed, `The call to tool "slow" on server "s" timed out during tools/call.`)

	// The tool's budget from andon.yaml: the text names it.
	res, err = tool.Call(context.Background(), json.RawMessage(`{"ms":60000}`))
	wantResult(t, res, err, agent.OutcomeFailed, `The call to tool "slow" on server "s" timed out during tools/call: its timeout of 200ms passed.`)
}

// A server that dies between calls is reconnected by the next call, which
// then succeeds: nothing was sent on the dead connection.
func TestIdleCrashReconnects(t *testing.T) {
	f := newFixture(t, []catalogue.Server{{Name: "s", Command: stdio}}, nil, nil)
	res, err := f.call(context.Background(), "mcp_s_echo", `{"text":"one"}`)
	wantResult(t, res, err, agent.OutcomeOK, "one")

	f.cut()
	f.logs.waitFor(t, "mcp: connection lost", 1)

	res, err = f.call(context.Background(), "mcp_s_echo", `{"text":"two"}`)
	wantResult(t, res, err, agent.OutcomeOK, "two")
	if n := f.dials.Load(); n != 2 {
		t.Errorf("dialled %d times, want 2", n)
	}
}

// A call that was sent, and whose server then died, is not retried: it
// fails, the server saw it once, and the next call reconnects.
func TestCrashMidCallNotRetried(t *testing.T) {
	f := newFixture(t, []catalogue.Server{{Name: "s", Command: stdio}}, nil, nil)
	res, err := f.call(context.Background(), "mcp_s_crash", "")
	if err == nil {
		t.Fatalf("a call whose server crashed = %+v, want an error", res)
	}
	if !errors.Is(err, mcp.ErrClosed) {
		t.Errorf("error = %v, want it to match mcp.ErrClosed", err)
	}
	if n := len(toolCalls(f.srv.Records(), "crash")); n != 1 {
		t.Errorf("the server received the crash call %d times, want once", n)
	}

	res, err = f.call(context.Background(), "mcp_s_echo", `{"text":"back"}`)
	wantResult(t, res, err, agent.OutcomeOK, "back")
	if n := len(toolCalls(f.srv.Records(), "crash")); n != 1 {
		t.Errorf("after the next call, the server received the crash call %d times, want once", n)
	}
	if n := f.dials.Load(); n != 2 {
		t.Errorf("dialled %d times, want 2", n)
	}
}

// A reconnection runs under the call's context: cancelling the call
// abandons it, in the dial or in the handshake, and the call is cancelled.
func TestCancelDuringReconnect(t *testing.T) {
	// crashed returns a fixture whose connection has just been lost, so
	// that the next call reconnects.
	crashed := func(t *testing.T) *fixture {
		f := newFixture(t, []catalogue.Server{{Name: "s", Command: stdio}}, nil, nil)
		f.tool("mcp_s_echo")
		f.cut()
		f.logs.waitFor(t, "mcp: connection lost", 1)
		return f
	}

	t.Run("dial", func(t *testing.T) {
		f := crashed(t)
		started := make(chan struct{})
		f.intercept(func(ctx context.Context, _ catalogue.Server, _ func() (mcp.Transport, error)) (mcp.Transport, error) {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		})
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-started; cancel() }()
		res, err := f.call(ctx, "mcp_s_echo", `{"text":"x"}`)
		wantResult(t, res, err, agent.OutcomeCancelled, "was cancelled")
	})

	t.Run("handshake", func(t *testing.T) {
		// A server that reads but never answers: the handshake hangs
		// until the call is cancelled, and the attempt is closed.
		f := crashed(t)
		peerClosed := make(chan struct{})
		f.intercept(func(context.Context, catalogue.Server, func() (mcp.Transport, error)) (mcp.Transport, error) {
			client, server := net.Pipe()
			f.wg.Go(func() {
				defer close(peerClosed)
				io.Copy(io.Discard, server)
			})
			return mcp.Stream(client), nil
		})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		res, err := f.call(ctx, "mcp_s_echo", `{"text":"x"}`)
		wantResult(t, res, err, agent.OutcomeCancelled, "was cancelled")
		select {
		case <-peerClosed:
		case <-time.After(10 * time.Second):
			t.Fatal("the abandoned connection attempt was never closed")
		}
	})

	// Every leg of the handshake hears the cancel, not only the first: a
	// server that answers discover and stalls initialize, and one that
	// stalls the notifications/initialized POST.
	for _, leg := range []struct {
		name   string
		method string
		dial   func(t *testing.T, s *mcptest.Server) mcp.Transport
	}{
		{"handshake/initialize", "initialize", func(t *testing.T, s *mcptest.Server) mcp.Transport { return s.Transport() }},
		{"handshake/notifications/initialized", "notifications/initialized", func(t *testing.T, s *mcptest.Server) mcp.Transport {
			hs := httptest.NewServer(s.HTTPHandler(nil))
			t.Cleanup(func() {
				hs.CloseClientConnections()
				hs.Close()
			})
			return mcp.HTTP(hs.URL, hs.Client())
		}},
	} {
		t.Run(leg.name, func(t *testing.T) {
			f := crashed(t)
			stalled := mcptest.NewServer(&mcptest.Options{Versions: []string{mcp.Version20251125}, Stall: []string{leg.method}})
			t.Cleanup(stalled.Close)
			f.intercept(func(context.Context, catalogue.Server, func() (mcp.Transport, error)) (mcp.Transport, error) {
				return leg.dial(t, stalled), nil
			})
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				stalled.WaitFor(ctx, func(r mcptest.Record) bool { return r.Kind == mcptest.Received && r.Method == leg.method })
				cancel()
			}()
			res, err := f.call(ctx, "mcp_s_echo", `{"text":"x"}`)
			wantResult(t, res, err, agent.OutcomeCancelled, "was cancelled")
			if len(stalled.ReceivedMessages(leg.method)) != 1 {
				t.Errorf("the server never received %s: the call was cancelled before the leg", leg.method)
			}
		})
	}

	t.Run("waiting for another call's reconnection", func(t *testing.T) {
		f := crashed(t)
		entered := make(chan struct{})
		release := make(chan struct{})
		f.intercept(func(_ context.Context, _ catalogue.Server, next func() (mcp.Transport, error)) (mcp.Transport, error) {
			close(entered)
			<-release
			return next()
		})
		first := make(chan *agent.ToolResult, 1)
		go func() {
			res, _ := f.call(context.Background(), "mcp_s_echo", `{"text":"first"}`)
			first <- res
		}()
		<-entered // the first call holds the reconnection
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		res, err := f.call(ctx, "mcp_s_echo", `{"text":"second"}`)
		wantResult(t, res, err, agent.OutcomeFailed, "timed out")
		close(release)
		if res := <-first; res == nil || res.Outcome != agent.OutcomeOK || res.Text != "first" {
			t.Errorf("the reconnecting call = %+v", res)
		}
	})
}

// Many calls share one connection, and one reconnection.
func TestConcurrentCallsShareOneClient(t *testing.T) {
	f := newFixture(t, []catalogue.Server{{Name: "s", Command: stdio}}, nil, nil)
	tool := f.tool("mcp_s_echo")
	f.cut()
	f.logs.waitFor(t, "mcp: connection lost", 1)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			text := fmt.Sprint(i)
			res, err := tool.Call(context.Background(), json.RawMessage(`{"text":"`+text+`"}`))
			if err != nil || res.Outcome != agent.OutcomeOK || res.Text != text {
				t.Errorf("call %d = %+v, %v", i, res, err)
			}
		})
	}
	wg.Wait()
	if n := f.dials.Load(); n != 2 {
		t.Errorf("dialled %d times, want 2: one reconnection for all the calls", n)
	}
}

// A server that cannot be reached is left out of the listing, not an error
// for it; a lookup of its tool is a tool that fails, naming the server,
// and sends nothing; no listing or lookup tries it again within its
// back-off; an operator's Import does, and its tools are offered from then
// on.
func TestImportFailure(t *testing.T) {
	f := newFixture(t, []catalogue.Server{{Name: "good", Command: stdio}, {Name: "bad", Command: stdio}}, nil,
		&catalogue.Options{ImportBackoff: time.Hour})
	var fail atomic.Bool
	var badDials atomic.Int32
	fail.Store(true)
	f.intercept(func(_ context.Context, s catalogue.Server, next func() (mcp.Transport, error)) (mcp.Transport, error) {
		if s.Name == "bad" {
			badDials.Add(1)
			if fail.Load() {
				return nil, errors.New("no route to the server")
			}
		}
		return next()
	})
	tools, err := f.cat.List(context.Background())
	if err != nil || len(tools) != 15 {
		t.Fatalf("List while a server cannot import = %d tools, %v; want the 15 of the good one", len(tools), err)
	}
	for _, tool := range tools {
		if !strings.HasPrefix(tool.Spec().Name, "mcp_good_") {
			t.Errorf("List offers %s", tool.Spec().Name)
		}
	}
	tool, err := f.cat.Lookup(context.Background(), "mcp_bad_echo")
	if err != nil || tool == nil {
		t.Fatalf("Lookup(a tool of the failed server) = %v, %v; want an unavailable tool", tool, err)
	}
	if tool.Unavailable() == nil || tool.RequiresApproval() || tool.Effect() != agent.EffectReadOnly {
		t.Errorf("the unavailable tool: unavailable %v, approval %v, effect %s; want it to send nothing, needing no approval",
			tool.Unavailable(), tool.RequiresApproval(), tool.Effect())
	}
	res, err := tool.Call(context.Background(), json.RawMessage(`{"text":"x"}`))
	wantResult(t, res, err, agent.OutcomeFailed, `Server "bad": failed during connecting: `)
	if !strings.Contains(res.Text, "no route") || !strings.Contains(res.Text, `Tool "mcp_bad_echo" was not called`) ||
		!strings.Contains(res.Text, "It tries the server again from") {
		t.Errorf("the unavailable tool's result %q does not say why, or when the server is tried again", res.Text)
	}
	if tool, err := f.cat.Tool(context.Background(), "mcp_nobody_echo"); tool != nil || err != nil {
		t.Errorf("Tool(a name of no server) = %v, %v; want nil, nil", tool, err)
	}
	if _, err := f.cat.List(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := badDials.Load(); n != 1 {
		t.Errorf("the failed server was dialled %d times; want once: within its back-off nothing tries it again", n)
	}
	var info catalogue.ServerInfo
	for _, in := range f.cat.Servers() {
		if in.Name == "bad" {
			info = in
		}
	}
	if !strings.Contains(info.Error, "no route") || info.Failures != 1 || info.RetryAt.Sub(info.FailedAt) != time.Hour {
		t.Errorf("Servers reports the failed server as %+v; want its error, one failure, a retry in an hour", info)
	}

	fail.Store(false)
	if _, err := f.cat.Import(context.Background(), "bad"); err != nil {
		t.Fatalf("Import once the server came back: %v", err)
	}
	tools, err = f.cat.List(context.Background())
	if err != nil || len(tools) != 30 { // 15 on each server (mcptest leaves one out on 2026-07-28)
		t.Fatalf("List after the server came back = %d tools, %v", len(tools), err)
	}
	for _, in := range f.cat.Servers() {
		if in.Name == "bad" && (in.Error != "" || in.Failures != 0 || !in.RetryAt.IsZero()) {
			t.Errorf("Servers after a good import: %+v; want no error and no retry", in)
		}
	}
	if n := f.dials.Load(); n != 2 {
		t.Errorf("dialled %d times, want 2: the good server is not imported twice", n)
	}
}

// When no enabled server can be imported, the listing is an error naming
// each one: a run cannot do anything useful.
func TestListFailsWhenNoServerImports(t *testing.T) {
	f := newFixture(t, []catalogue.Server{{Name: "a", Command: stdio}, {Name: "b", Command: stdio}}, nil, nil)
	f.intercept(func(context.Context, catalogue.Server, func() (mcp.Transport, error)) (mcp.Transport, error) {
		return nil, errors.New("no route to the server")
	})
	for range 2 { // the second within the back-off
		_, err := f.cat.List(context.Background())
		var ie *catalogue.ImportError
		if err == nil || !errors.As(err, &ie) || !strings.Contains(err.Error(), `server "a"`) || !strings.Contains(err.Error(), `server "b"`) {
			t.Fatalf("List = %v, want an ImportError naming both servers", err)
		}
	}
	if n := f.dials.Load(); n != 0 {
		t.Errorf("the fixture dialled %d times", n)
	}
}

// A listing waits for the first import of a server that never answers, but
// that import holds nothing another server's calls need: the healthy
// server's tool is called while it is under way.
func TestStalledImportHoldsNothing(t *testing.T) {
	f := newFixture(t, []catalogue.Server{{Name: "good", Command: stdio}, {Name: "stuck", Command: stdio}}, nil, nil)
	entered := make(chan struct{})
	release := make(chan struct{})
	f.intercept(func(ctx context.Context, s catalogue.Server, next func() (mcp.Transport, error)) (mcp.Transport, error) {
		if s.Name == "stuck" {
			close(entered)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil, errors.New("gave up")
		}
		return next()
	})
	listed := make(chan error, 1)
	go func() {
		_, err := f.cat.List(context.Background())
		listed <- err
	}()
	<-entered
	// Bounded, so that a call that waits for the stuck import fails.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tool, err := f.cat.Lookup(ctx, "mcp_good_echo")
	if err != nil || tool == nil {
		t.Fatalf("Lookup during the stuck import = %v, %v", tool, err)
	}
	res, err := tool.Call(ctx, json.RawMessage(`{"text":"meanwhile"}`))
	wantResult(t, res, err, agent.OutcomeOK, "meanwhile")
	select {
	case err := <-listed:
		t.Fatalf("the listing returned (%v) before the stuck import ended", err)
	default:
	}
	close(release)
	if err := <-listed; err != nil {
		t.Errorf("List = %v; want the good server's tools", err)
	}
}

func TestClose(t *testing.T) {
	f := newFixture(t, []catalogue.Server{{Name: "s", Command: stdio}}, nil, nil)
	tool := f.tool("mcp_s_slow")
	errc := make(chan error, 1)
	go func() {
		_, err := tool.Call(context.Background(), json.RawMessage(`{"ms":60000}`))
		errc <- err
	}()
	f.srv.WaitFor(context.Background(), func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted })
	if err := f.cat.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	if err := <-errc; !errors.Is(err, mcp.ErrClosed) {
		t.Errorf("call in flight at Close = %v, want mcp.ErrClosed", err)
	}
	if _, err := tool.Call(context.Background(), json.RawMessage(`{"ms":1}`)); !errors.Is(err, catalogue.ErrClosed) {
		t.Errorf("call after Close = %v, want ErrClosed", err)
	}
	if _, err := f.cat.List(context.Background()); !errors.Is(err, catalogue.ErrClosed) {
		t.Errorf("List after Close = %v, want ErrClosed", err)
	}
	if err := f.cat.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

// The default dialler reaches an HTTP server at its URL, with the
// configured headers.
func TestHTTPServer(t *testing.T) {
	srv := mcptest.NewServer(nil)
	hs := httptest.NewServer(srv.HTTPHandler(nil))
	defer func() {
		hs.Close()
		srv.Close()
	}()
	cat, err := catalogue.New(&catalogue.Config{Servers: []catalogue.Server{
		{Name: "web", URL: hs.URL + "/mcp", Headers: map[string]string{"X-Andon-Test": "yes"}, Protocol: mcp.Version20251125},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	tool, err := cat.Lookup(context.Background(), "mcp_web_echo")
	if err != nil || tool == nil {
		t.Fatalf("Lookup = %v, %v", tool, err)
	}
	res, err := tool.Call(context.Background(), json.RawMessage(`{"text":"over http"}`))
	wantResult(t, res, err, agent.OutcomeOK, "over http")
	calls := toolCalls(srv.Records(), "echo")
	if len(calls) != 1 || calls[0].Header.Get("X-Andon-Test") != "yes" {
		t.Errorf("the server received %d echo calls, headers %v", len(calls), calls)
	}
	if got := calls[0].Header.Get("Mcp-Protocol-Version"); got != mcp.Version20251125 {
		t.Errorf("protocol = %q, want the pinned %s", got, mcp.Version20251125)
	}
}

// logCapture is a slog handler that keeps every message.
type logCapture struct {
	mu      sync.Mutex
	msgs    []string
	changed chan struct{}
}

func newLogCapture() *logCapture { return &logCapture{changed: make(chan struct{})} }

func (l *logCapture) Enabled(context.Context, slog.Level) bool { return true }

func (l *logCapture) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	close(l.changed)
	l.changed = make(chan struct{})
	return nil
}

func (l *logCapture) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logCapture) WithGroup(string) slog.Handler      { return l }

func (l *logCapture) count(msg string) (int, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if m == msg {
			n++
		}
	}
	return n, l.changed
}

func (l *logCapture) has(msg string) bool {
	n, _ := l.count(msg)
	return n > 0
}

// waitFor waits until msg has been logged n times.
func (l *logCapture) waitFor(t *testing.T, msg string, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		got, changed := l.count(msg)
		if got >= n {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("%q was logged %d times, want %d", msg, got, n)
		}
	}
}
