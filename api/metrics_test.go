package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
	"github.com/andonhq/andon/metrics"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/sqlstore/pgtest"
	"github.com/andonhq/andon/sqlstore/storetest"
	"github.com/andonhq/andon/token"
)

// metricsFixture is the API in front of a real runtime on a real SQLite
// store, with the process's metrics wired as cmd/andon wires them: the
// catalogue's OnCall, the MCP clients' OnCancelSent, the watcher's reads.
// Its tools come from two in-process mcptest servers: "alpha" over a pipe
// (the stdio transport) and "beta" over HTTP on loopback.
type metricsFixture struct {
	*fixture
	cat     *catalogue.Catalogue
	beta    *mcptest.Server
	metrics *metrics.Metrics
}

func newMetricsFixture(t *testing.T) *metricsFixture {
	t.Helper()
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, filepath.Join(t.TempDir(), "andon.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &metricsFixture{
		fixture: &fixture{t: t, store: &faultyStore{Store: st}, mcp: mcptest.NewServer(nil), logs: &syncBuffer{}},
		beta:    mcptest.NewServer(nil),
	}
	t.Cleanup(f.mcp.Close)
	t.Cleanup(f.beta.Close)
	hs := httptest.NewServer(f.beta.HTTPHandler(nil))
	t.Cleanup(hs.Close)

	logger := slog.New(slog.NewTextHandler(f.logs, nil))
	f.metrics = metrics.New(logger)
	no := false
	f.cat, err = catalogue.New(&catalogue.Config{Servers: []catalogue.Server{
		{Name: "alpha", Command: []string{"unused: dialled in process"}, RequiresApproval: &no},
		{Name: "beta", URL: hs.URL, RequiresApproval: &no},
	}}, &catalogue.Options{
		Dial: func(_ context.Context, s catalogue.Server) (mcp.Transport, error) {
			if s.Name == "beta" {
				return &mcp.HTTPTransport{URL: hs.URL, Client: hs.Client()}, nil
			}
			return f.mcp.Transport(), nil
		},
		Client: &mcp.ClientOptions{OnCancelSent: f.metrics.CancelSent},
		OnCall: f.metrics.ToolCall,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.cat.Close() })

	f.rt, err = agent.New(agent.Config{
		Store:         f.store,
		Tools:         f.cat,
		NewModel:      newScriptModel,
		WatchInterval: 20 * time.Millisecond,
		ClaimInterval: 5 * time.Millisecond,
		ReapInterval:  time.Hour,
		Logger:        logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.rt.Close)
	if err := f.metrics.CountWatcherReads(f.rt.Watcher()); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.rt.Run(runCtx)
	}()
	t.Cleanup(func() {
		stop()
		<-done
	})

	h, err := api.NewHandler(api.Config{Runtime: f.rt, Store: f.store, Metrics: f.metrics, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	as := httptest.NewServer(h)
	t.Cleanup(as.Close)
	f.url, f.http = as.URL, as.Client()
	f.client = &api.Client{BaseURL: as.URL, HTTP: f.http}
	return f
}

// scrape GETs /metrics and returns every sample, by series as the text
// format writes it: name{label="value",…}, labels sorted by name.
func scrape(t *testing.T, client *http.Client, url string) map[string]float64 {
	t.Helper()
	resp, err := client.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %s, Content-Type %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("unparsable sample %q", line)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// scrapeUntil scrapes until ok accepts a scrape (some observations land
// just after the call returns: a cancellation is signalled off the
// caller's path), and returns it.
func scrapeUntil(t *testing.T, client *http.Client, url string, ok func(map[string]float64) bool) map[string]float64 {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		m := scrape(t, client, url)
		if ok(m) || time.Now().After(deadline) {
			return m
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A scrape after real calls shows them by server and outcome, the
// cancellations' way to the wire by transport, the runs by status as the
// store has them, and the watcher's reads.
func TestMetricsAfterRealCalls(t *testing.T) {
	f := newMetricsFixture(t)
	ctx := context.Background()

	// Through the API: a run that calls alpha's echo, and one whose slow
	// call on alpha is cancelled by the operator.
	done := f.create(`{"steps":[{"tool_calls":[{"name":"mcp_alpha_echo","arguments":{"text":"hi"}}]},{"text":"done"}]}`)
	f.waitStatus(done.ID, agent.StatusCompleted)
	slow := f.create(`{"steps":[{"tool_calls":[{"name":"mcp_alpha_slow","arguments":{"ms":60000}}]},{"text":"done"}]}`)
	f.waitToolStarted("slow")
	if _, err := f.client.CancelRun(ctx, slow.ID); err != nil {
		t.Fatalf("CancelRun: %v", err)
	}
	f.waitSteps(slow.ID, 2) // the model turn and the cancelled call

	// Straight through the catalogue, on beta over HTTP: an error, a
	// timeout and a cancel.
	call := func(ctx context.Context, tool, args string) *agent.ToolResult {
		t.Helper()
		tl, err := f.cat.Lookup(ctx, tool)
		if err != nil || tl == nil {
			t.Fatalf("Lookup(%s) = %v, %v", tool, tl, err)
		}
		res, err := tl.Call(ctx, json.RawMessage(args))
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return res
	}
	call(ctx, "mcp_beta_fail", `{"message":"no"}`)
	tctx, tcancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer tcancel()
	call(tctx, "mcp_beta_slow", `{"ms":60000}`)
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		defer cancel()
		wctx, wcancel := context.WithTimeout(ctx, patience)
		defer wcancel()
		// The second slow call on beta (the first timed out).
		f.beta.WaitFor(wctx, func(mcptest.Record) bool { return countStarted(f.beta) == 2 })
	}()
	if res := call(cctx, "mcp_beta_slow", `{"ms":60000}`); res.Outcome != agent.OutcomeCancelled {
		t.Fatalf("beta slow call: %s, want cancelled", res.Outcome)
	}

	m := scrapeUntil(t, f.http, f.url, func(m map[string]float64) bool {
		return m[`andon_cancel_to_wire_seconds_count{transport="stdio"}`] >= 1 && m[`andon_cancel_to_wire_seconds_count{transport="http"}`] >= 2
	})
	want := map[string]float64{
		`andon_tool_calls_total{outcome="ok",server="alpha"}`:                     1,
		`andon_tool_calls_total{outcome="cancelled",server="alpha"}`:              1,
		`andon_tool_calls_total{outcome="error",server="beta"}`:                   1,
		`andon_tool_calls_total{outcome="timeout",server="beta"}`:                 1,
		`andon_tool_calls_total{outcome="cancelled",server="beta"}`:               1,
		`andon_tool_call_duration_seconds_count{outcome="ok",server="alpha"}`:     1,
		`andon_tool_call_duration_seconds_count{outcome="timeout",server="beta"}`: 1,
		// The operator's cancel on stdio; the timeout and the cancel on
		// 2026-07-28 HTTP, where closing the stream is the signal.
		`andon_cancel_to_wire_seconds_count{transport="stdio"}`: 1,
		`andon_cancel_to_wire_seconds_count{transport="http"}`:  2,
		`andon_runs{status="completed"}`:                        1,
		`andon_runs{status="cancelled"}`:                        1,
		`andon_runs{status="queued"}`:                           0,
		`andon_runs{status="running"}`:                          0,
		`andon_runs{status="waiting_for_approval"}`:             0,
		`andon_runs{status="waiting_for_input"}`:                0,
		`andon_runs{status="failed"}`:                           0,
	}
	for series, v := range want {
		got, ok := m[series]
		if !ok || got != v {
			t.Errorf("%s = %v (present: %v), want %v", series, got, ok, v)
		}
	}
	for series := range m {
		if strings.HasPrefix(series, "andon_tool_calls_total{") {
			if _, ok := want[series]; !ok {
				t.Errorf("unexpected series %s = %v", series, m[series])
			}
		}
	}
	// The stdio cancel is a fraction of a second, inside the buckets.
	if m[`andon_cancel_to_wire_seconds_bucket{transport="stdio",le="+Inf"}`] != 1 {
		t.Errorf("stdio cancel-to-wire +Inf bucket = %v, want 1", m[`andon_cancel_to_wire_seconds_bucket{transport="stdio",le="+Inf"}`])
	}

	// The runs gauge is the store's count.
	counts, err := f.store.RunCountByStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for st, n := range counts {
		if got := m[fmt.Sprintf(`andon_runs{status=%q}`, st)]; got != float64(n) {
			t.Errorf("andon_runs{status=%q} = %v, the store says %d", st, got, n)
		}
	}

	// The watcher read once per run segment, and polled while the slow
	// call was in flight; the scrape shows its counts at that moment.
	_, freshBefore := f.rt.Watcher().StoreReads()
	m = scrape(t, f.http, f.url)
	polls, fresh := f.rt.Watcher().StoreReads()
	if got := m[`andon_watcher_store_reads_total{read="watch"}`]; got < 2 || got < float64(freshBefore) || got > float64(fresh) {
		t.Errorf(`andon_watcher_store_reads_total{read="watch"} = %v, want ≥ 2 and between %d and %d`, got, freshBefore, fresh)
	}
	if got := m[`andon_watcher_store_reads_total{read="poll"}`]; got > float64(polls) {
		t.Errorf(`andon_watcher_store_reads_total{read="poll"} = %v, more than the watcher's %d`, got, polls)
	}
	if _, ok := m["go_goroutines"]; !ok {
		t.Error("no go_goroutines: the Go collector is missing")
	}
}

func countStarted(s *mcptest.Server) int {
	n := 0
	for _, r := range s.Records() {
		if r.Kind == mcptest.ToolStarted && r.Tool == "slow" {
			n++
		}
	}
	return n
}

// countFailure is a store whose run counts cannot be read.
type countFailure struct{ *faultyStore }

func (countFailure) RunCountByStatus(context.Context) (map[agent.Status]int64, error) {
	return nil, errors.New("database is down")
}

// A store that cannot count leaves andon_runs out of the scrape, and the
// rest is served; the worker's handler has no andon_runs at all.
func TestMetricsWithoutRuns(t *testing.T) {
	f := newMetricsFixture(t)
	h, err := api.NewHandler(api.Config{Runtime: f.rt, Store: countFailure{f.store}, Metrics: f.metrics})
	if err != nil {
		t.Fatal(err)
	}
	for name, h := range map[string]http.Handler{"store down": h, "worker": f.metrics.Handler()} {
		t.Run(name, func(t *testing.T) {
			hs := httptest.NewServer(h)
			defer hs.Close()
			m := scrape(t, hs.Client(), hs.URL)
			for series := range m {
				if strings.HasPrefix(series, "andon_runs") {
					t.Errorf("unexpected %s", series)
				}
			}
			if _, ok := m[`andon_watcher_store_reads_total{read="poll"}`]; !ok {
				t.Error("andon_watcher_store_reads_total is missing")
			}
		})
	}
}

// GET /metrics needs a token of role viewer or above: a viewer scrapes the
// runs by status; a request without a token is refused (and audited, as
// every denial is: see TestEveryRouteRefusesBelowItsRole).
func TestMetricsNeedAViewer(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true, tokens: true})
	f.create(finalScript)
	status, header, body := f.request("GET", "/metrics", "", "")
	checkError(t, status, header, body, http.StatusUnauthorized, "unauthenticated")
	status, _, body = f.request("GET", "/metrics", "Bearer "+f.token("watcher", token.RoleViewer), "")
	if status != http.StatusOK || !strings.Contains(string(body), `andon_runs{status="queued"} 1`) {
		t.Errorf("GET /metrics as a viewer: %d\n%s", status, body)
	}
}

// andon_runs is the store's count by status, on SQLite and on PostgreSQL.
func TestMetricsRunsMatchTheStore(t *testing.T) {
	t.Parallel()
	backends := map[string]func(t *testing.T) storetest.RunCounter{
		"sqlite": func(t *testing.T) storetest.RunCounter {
			st, err := sqlstore.Open(context.Background(), filepath.Join(t.TempDir(), "andon.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
		"postgres": func(t *testing.T) storetest.RunCounter {
			st, err := sqlstore.OpenPostgres(context.Background(), pgtest.Schema(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			store := open(t)
			ctx := context.Background()
			n := 0
			for status, count := range map[agent.Status]int{agent.StatusQueued: 3, agent.StatusRunning: 2, agent.StatusCompleted: 4, agent.StatusCancelled: 1} {
				for range count {
					n++
					run := &agent.Run{ID: fmt.Sprintf("run_%02d", n), Owner: "alice", Request: json.RawMessage(`{"prompt":"p"}`), Status: status}
					if err := store.RunInsert(ctx, run); err != nil {
						t.Fatal(err)
					}
				}
			}
			rt, err := agent.New(agent.Config{Store: store, Tools: emptyCatalogue(t), NewModel: newScriptModel}) // never run
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			h, err := api.NewHandler(api.Config{Runtime: rt, Store: store})
			if err != nil {
				t.Fatal(err)
			}
			hs := httptest.NewServer(h)
			defer hs.Close()
			m := scrape(t, hs.Client(), hs.URL)

			counts, err := store.RunCountByStatus(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if counts[agent.StatusCompleted] != 4 || counts[agent.StatusRunning] != 2 {
				t.Fatalf("the store counts %v", counts)
			}
			for _, status := range []agent.Status{agent.StatusQueued, agent.StatusRunning, agent.StatusWaitingForApproval,
				agent.StatusWaitingForInput, agent.StatusCompleted, agent.StatusFailed, agent.StatusCancelled} {
				series := fmt.Sprintf("andon_runs{status=%q}", status)
				if got, ok := m[series]; !ok || got != float64(counts[status]) {
					t.Errorf("%s = %v (present: %v), the store says %d", series, got, ok, counts[status])
				}
			}
		})
	}
}

// A server whose import fails is counted, each failure once, by server;
// one that imports is not.
func TestMetricsCountImportFailures(t *testing.T) {
	m := metrics.New(nil)
	up := mcptest.NewServer(nil)
	t.Cleanup(up.Close)
	cat, err := catalogue.New(&catalogue.Config{Servers: []catalogue.Server{
		{Name: "down", Command: []string{"unused: dialled in process"}},
		{Name: "up", Command: []string{"unused: dialled in process"}},
	}}, &catalogue.Options{
		Dial: func(_ context.Context, s catalogue.Server) (mcp.Transport, error) {
			if s.Name == "down" {
				return nil, errors.New("no route to the server")
			}
			return up.Transport(), nil
		},
		OnImport: m.ServerImport,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	if _, err := cat.List(context.Background()); err != nil {
		t.Fatalf("List = %v; want the tools of up", err)
	}
	if _, err := cat.Import(context.Background(), "down"); err == nil {
		t.Fatal("importing down worked")
	}
	hs := httptest.NewServer(m.Handler())
	defer hs.Close()
	got := scrape(t, hs.Client(), hs.URL)
	if n := got[`andon_server_import_failures_total{server="down"}`]; n != 2 {
		t.Errorf("import failures of down = %v, want 2", n)
	}
	if n, ok := got[`andon_server_import_failures_total{server="up"}`]; ok {
		t.Errorf("import failures of up = %v, want none", n)
	}
}
