package catalogue_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
	"github.com/andonhq/andon/model"
	"github.com/andonhq/andon/model/script"
	"github.com/andonhq/andon/sqlstore"
)

// runner runs agent runs on a catalogue: a real runtime on SQLite, with the
// script model.
type runner struct {
	t     *testing.T
	store *sqlstore.Store
	rt    *agent.Runtime
}

func newRunner(t *testing.T, cat *catalogue.Catalogue) *runner {
	t.Helper()
	r := &runner{t: t, store: openStore(t, filepath.Join(t.TempDir(), "andon.db"))}
	var err error
	r.rt, err = agent.New(agent.Config{
		Store: r.store,
		Tools: cat,
		NewModel: func(_ context.Context, req *agent.Request) (model.Model, error) {
			s, err := script.Parse(req.Script)
			if err != nil {
				return nil, err
			}
			return script.New(s)
		},
		WatchInterval: 20 * time.Millisecond,
		ClaimInterval: 5 * time.Millisecond,
		ReapInterval:  time.Hour,
		Logger:        slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.rt.Run(ctx)
	}()
	t.Cleanup(func() {
		stop()
		<-done
		r.rt.Close()
	})
	return r
}

// run submits a run of the script, waits (with a generous bound) for it to
// end, and returns it with its steps.
func (r *runner) run(script string) (*agent.Run, []*agent.Step) {
	r.t.Helper()
	ctx := context.Background()
	run, err := r.rt.Submit(ctx, "alice", &agent.Request{Prompt: "go", Script: json.RawMessage(script)})
	if err != nil {
		r.t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, err := r.store.RunGet(ctx, run.ID)
		if err != nil {
			r.t.Fatal(err)
		}
		if got.Status.Terminal() {
			steps, err := r.store.StepList(ctx, run.ID)
			if err != nil {
				r.t.Fatal(err)
			}
			return got, steps
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("run %s still %s after 2 minutes", run.ID, got.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wantToolStep checks that the run completed and that its one tool step
// ended with outcome, its text containing each of texts.
func wantToolStep(t *testing.T, run *agent.Run, steps []*agent.Step, outcome agent.Outcome, texts ...string) {
	t.Helper()
	if run.Status != agent.StatusCompleted {
		t.Errorf("run %s: status %s (%s), want completed", run.ID, run.Status, run.Error)
	}
	var tool []*agent.Step
	for _, s := range steps {
		if s.Kind == agent.StepTool {
			tool = append(tool, s)
		}
	}
	if len(tool) != 1 {
		t.Fatalf("run %s: %d tool steps, want 1", run.ID, len(tool))
	}
	if tool[0].Outcome != outcome {
		t.Errorf("run %s: tool step %s: outcome %s (%q), want %s", run.ID, tool[0].Tool, tool[0].Outcome, tool[0].Text, outcome)
	}
	for _, text := range texts {
		if !strings.Contains(tool[0].Text, text) {
			t.Errorf("run %s: tool step %s: text %q, want it to contain %q", run.ID, tool[0].Tool, tool[0].Text, text)
		}
	}
}

// callScript is a script that calls tool with args, then ends.
func callScript(tool, args string) string {
	return `{"steps":[{"tool_calls":[{"name":"` + tool + `","arguments":` + args + `}]},{"text":"done"}]}`
}

// countingDial dials with catalogue.DefaultDial, counting the dials of each
// server.
type countingDial struct {
	mu    sync.Mutex
	dials map[string]int
}

func (d *countingDial) dial(ctx context.Context, s catalogue.Server) (mcp.Transport, error) {
	d.mu.Lock()
	if d.dials == nil {
		d.dials = map[string]int{}
	}
	d.dials[s.Name]++
	d.mu.Unlock()
	return catalogue.DefaultDial(ctx, s)
}

func (d *countingDial) count(server string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dials[server]
}

// parse reads a configuration as andon.yaml would hold it.
func parse(t *testing.T, yaml string) *catalogue.Config {
	t.Helper()
	cfg, err := catalogue.Parse([]byte(yaml))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return cfg
}

// healthyStdio is a healthy stdio server: this test binary, as an mcptest
// server (see TestMain).
const healthyStdio = `
  - name: good
    command: ["@andon"]
    env: {ANDON_TEST_MCPTEST_SERVE: "1"}
    requires_approval: false
    tools:
      slow: {timeout: 1s}
`

// withinTheTest is the import back-off of the tests that assert what
// happens within it: longer than any run of them on a loaded machine, so
// that a slow run cannot outlast it (the default, 5 s, could).
const withinTheTest = time.Hour

// Over stdio, with real subprocesses: a server that never answers (sleep)
// costs the first listing its budget once, and no run anything else. A run
// on the healthy server completes normally; a run that needs the dead
// server's tool gets a failed step naming the server and the leg, and goes
// on; andon.yaml's timeout bounds a call to a server that stalls it; the
// dead server is not dialled again within its back-off.
func TestDeadStdioServerLeavesHealthyRunsAlone(t *testing.T) {
	d := &countingDial{}
	var mu sync.Mutex
	imports := map[string][]error{}
	cat, err := catalogue.New(parse(t, "servers:"+healthyStdio+`
  - name: dead
    command: ["sleep", "3600"]
    protocol: "2025-11-25"
    requires_approval: false
    timeout: 1s
`), &catalogue.Options{Dial: d.dial, ImportBackoff: withinTheTest, OnImport: func(server string, err error) {
		mu.Lock()
		imports[server] = append(imports[server], err)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	r := newRunner(t, cat)

	run, steps := r.run(callScript("mcp_good_echo", `{"text":"healthy"}`))
	wantToolStep(t, run, steps, agent.OutcomeOK, "healthy")

	run, steps = r.run(callScript("mcp_dead_echo", `{}`))
	wantToolStep(t, run, steps, agent.OutcomeFailed, `Server "dead": timed out during initialize`)

	// The budget of a call to a server that stalls it.
	run, steps = r.run(callScript("mcp_good_slow", `{"ms":600000}`))
	wantToolStep(t, run, steps, agent.OutcomeFailed, `timed out during tools/call: its timeout of 1s passed`)

	run, steps = r.run(callScript("mcp_good_echo", `{"text":"still healthy"}`))
	wantToolStep(t, run, steps, agent.OutcomeOK, "still healthy")

	if n := d.count("dead"); n != 1 {
		t.Errorf("the dead server was dialled %d times, want once: within its back-off no run tries it again", n)
	}
	if n := d.count("good"); n != 1 {
		t.Errorf("the healthy server was dialled %d times, want once", n)
	}
	wantServerReported(t, cat, "dead", "timed out during initialize")
	mu.Lock()
	defer mu.Unlock()
	if errs := imports["dead"]; len(errs) != 1 || errs[0] == nil {
		t.Errorf("OnImport was told of the dead server's imports: %v, want one failure", errs)
	}
	if errs := imports["good"]; len(errs) != 1 || errs[0] != nil {
		t.Errorf("OnImport was told of the healthy server's imports: %v, want one success", errs)
	}
}

// wantServerReported checks that Servers reports the failed import of
// server, saying summary, and when it will be tried again.
func wantServerReported(t *testing.T, cat *catalogue.Catalogue, server, summary string) {
	t.Helper()
	for _, info := range cat.Servers() {
		if info.Name != server {
			continue
		}
		if info.Imported || !strings.Contains(info.Error, summary) && !strings.Contains(info.Error, strings.TrimPrefix(summary, "timed out during ")) {
			t.Errorf("server %s: imported %v, error %q; want a failed import saying %q", server, info.Imported, info.Error, summary)
		}
		if info.Failures != 1 || info.FailedAt.IsZero() || !info.RetryAt.After(info.FailedAt) {
			t.Errorf("server %s: failures %d, failed at %v, retry at %v; want one failure and a retry after it", server, info.Failures, info.FailedAt, info.RetryAt)
		}
		return
	}
	t.Errorf("no server %s", server)
}

// waitImportsFailed waits until each named server's import has failed (a
// bound only keeps a broken test from hanging).
func waitImportsFailed(t *testing.T, cat *catalogue.Catalogue, servers ...string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		failed := 0
		for _, info := range cat.Servers() {
			if slices.Contains(servers, info.Name) && info.Failures > 0 {
				failed++
			}
		}
		if failed == len(servers) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the imports of %v never failed: %+v", servers, cat.Servers())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// newSilentListener starts an mcptest.SilentListener for the test.
func newSilentListener(t *testing.T) *mcptest.SilentListener {
	t.Helper()
	l, err := mcptest.NewSilentListener()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// stallAfter serves h, an MCP server over HTTP, until the first request
// whose method is not one of answered: that request, and every later one,
// is held without an answer until the client gives up. It counts the
// messages it receives (POSTs) but the cancels of stalled ones: those, a
// session's standalone stream (GET) and its end (DELETE) follow from the
// stall on the client's own schedule, and are no new attempt.
type stallAfter struct {
	h        http.Handler
	answered []string
	requests atomic.Int32
	stalled  atomic.Int32
	stop     chan struct{}
	url      string
}

func (s *stallAfter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var m struct {
		Method string `json:"method"`
	}
	json.Unmarshal(body, &m)
	if r.Method == http.MethodPost && m.Method != "notifications/cancelled" {
		s.requests.Add(1)
	}
	if r.Method == http.MethodPost && !slices.Contains(s.answered, m.Method) {
		s.stalled.Add(1)
		select {
		case <-r.Context().Done():
		case <-s.stop:
		}
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	s.h.ServeHTTP(w, r)
}

// newStallingServer serves an mcptest server over HTTP on loopback that
// answers only the methods in answered (and every GET or DELETE).
func newStallingServer(t *testing.T, answered ...string) *stallAfter {
	t.Helper()
	srv := mcptest.NewServer(nil)
	s := &stallAfter{h: srv.HTTPHandler(nil), answered: answered, stop: make(chan struct{})}
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		close(s.stop)
		hs.Close()
		srv.Close()
	})
	s.url = hs.URL + "/mcp"
	return s
}

// Over HTTP on loopback: a server that accepts connections and never
// answers, and one that answers the handshake and then stalls, cost the
// first listing their budgets once and no run anything else. A run on the
// healthy server completes normally; a run that needs a dead server's tool
// gets a failed step naming the server and the leg; andon.yaml's timeout
// bounds a call to a server that stalls it; neither dead server is
// reached again within its back-off.
func TestDeadHTTPServersLeaveHealthyRunsAlone(t *testing.T) {
	silent := newSilentListener(t)
	stalled := newStallingServer(t, "initialize", "notifications/initialized")
	callStalled := newStallingServer(t, "initialize", "notifications/initialized", "tools/list")
	// Answers initialize, then never answers the notifications/initialized
	// POST: a leg with no response of its own to wait for.
	initStalled := mcptest.NewServer(&mcptest.Options{Versions: []string{mcp.Version20251125}, Stall: []string{"notifications/initialized"}})
	initStalledHTTP := httptest.NewServer(initStalled.HTTPHandler(nil))
	t.Cleanup(initStalled.Close)
	t.Cleanup(func() {
		initStalledHTTP.CloseClientConnections()
		initStalledHTTP.Close()
	})
	d := &countingDial{}
	cat, err := catalogue.New(parse(t, "servers:"+healthyStdio+`
  - name: silent
    url: `+silent.URL()+`
    protocol: "2025-11-25"
    requires_approval: false
    timeout: 1s
  - name: stalled
    url: `+stalled.url+`
    protocol: "2025-11-25"
    requires_approval: false
    timeout: 1s
  - name: callstall
    url: `+callStalled.url+`
    protocol: "2025-11-25"
    requires_approval: false
    timeout: 1s
    tools:
      echo: {timeout: 2s}
  - name: initstall
    url: `+initStalledHTTP.URL+`
    requires_approval: false
    timeout: 1s
`), &catalogue.Options{Dial: d.dial, ImportBackoff: withinTheTest})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	r := newRunner(t, cat)

	run, steps := r.run(callScript("mcp_good_echo", `{"text":"healthy"}`))
	wantToolStep(t, run, steps, agent.OutcomeOK, "healthy")
	// The healthy run did not wait for the dead servers' first imports
	// (the listing's grace): what they received is counted once those
	// imports have failed.
	waitImportsFailed(t, cat, "silent", "stalled")
	accepts, stalledRequests := silent.Accepted(), stalled.requests.Load()

	run, steps = r.run(callScript("mcp_silent_echo", `{}`))
	wantToolStep(t, run, steps, agent.OutcomeFailed, `Server "silent": timed out during initialize`)
	run, steps = r.run(callScript("mcp_stalled_echo", `{}`))
	wantToolStep(t, run, steps, agent.OutcomeFailed, `Server "stalled": timed out during tools/list`)
	run, steps = r.run(callScript("mcp_callstall_echo", `{"text":"x"}`))
	wantToolStep(t, run, steps, agent.OutcomeFailed, `The call to tool "echo" on server "callstall" timed out during tools/call: its timeout of 2s passed`)
	run, steps = r.run(callScript("mcp_initstall_echo", `{}`))
	wantToolStep(t, run, steps, agent.OutcomeFailed, `Server "initstall": timed out during notifications/initialized`)
	run, steps = r.run(callScript("mcp_good_echo", `{"text":"still healthy"}`))
	wantToolStep(t, run, steps, agent.OutcomeOK, "still healthy")

	if accepts == 0 || stalledRequests == 0 {
		t.Fatalf("the first listing reached the silent server %d times, the stalled one %d times; want both tried", accepts, stalledRequests)
	}
	if n := silent.Accepted(); n != accepts {
		t.Errorf("the silent server accepted %d connections, %d after the first run: within its back-off no run tries it again", n, n-accepts)
	}
	if n := stalled.requests.Load(); n != stalledRequests {
		t.Errorf("the stalled server received %d requests, %d after the first run: within its back-off no run tries it again", n, n-stalledRequests)
	}
	for _, s := range []string{"silent", "stalled"} {
		if n := d.count(s); n != 1 {
			t.Errorf("server %s was dialled %d times, want once", s, n)
		}
	}
	wantServerReported(t, cat, "silent", "timed out during initialize")
	wantServerReported(t, cat, "stalled", "timed out during tools/list")
	wantServerReported(t, cat, "initstall", "timed out during notifications/initialized")
}
