package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

	"go.uber.org/goleak"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
	"github.com/andonhq/andon/model"
	"github.com/andonhq/andon/model/script"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/sqlstore/pgtest"
	"github.com/andonhq/andon/token"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// patience bounds every wait. It only keeps a broken test from hanging; no
// test asserts how long anything took.
const patience = 10 * time.Second

// options shape a fixture.
type options struct {
	// approval makes the test server's tools require an operator's
	// approval.
	approval bool
	// audit configures an audit log over the same store.
	audit bool
	// actor is who the API acts as; zero means the default (an admin).
	actor agent.Actor
	// idle leaves the runtime's worker loop off: runs stay queued.
	idle bool
	// fourEyes makes the test server's tools need someone other than the
	// run's owner to approve them (approval: other_person).
	fourEyes bool
	// tokens turns authentication on, with the store's tokens (and an
	// audit log, which it needs). f.client then carries an admin token.
	tokens bool
	// postgres puts the store on the test PostgreSQL, in a fresh schema,
	// instead of a SQLite file; with tokens, the API cancels with the
	// store's TokenCanceller.
	postgres bool
	// configure, if set, changes the API's config before the handler is
	// made.
	configure func(*api.Config)
	// wrap, if set, wraps the API's handler.
	wrap func(http.Handler) http.Handler
	// elicit offers the test server's elicit tool, and puts its questions
	// to the operator (the runtime's and the API's Inputs).
	elicit bool
}

// fixture is the API in front of a real runtime, on a real SQLite store,
// whose tools come from a catalogue of one in-process mcptest server
// ("test": mcp_test_echo, mcp_test_slow, …) and whose model is the script
// model; served with httptest on loopback and called with api.Client.
type fixture struct {
	t      *testing.T
	store  *faultyStore
	sqlite *sqlstore.Store
	rt     *agent.Runtime
	mcp    *mcptest.Server
	audit  *audit.Log
	url    string
	http   *http.Client
	client *api.Client
	logs   *syncBuffer
	dbPath string // the SQLite file of store
}

func newFixture(t *testing.T, o options) *fixture {
	t.Helper()
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "andon.db")
	dsn := dbPath
	if o.postgres {
		dsn = pgtest.Schema(t)
	}
	st, err := sqlstore.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{t: t, store: &faultyStore{Store: st}, sqlite: st, mcp: mcptest.NewServer(&mcptest.Options{Elicit: o.elicit}), logs: &syncBuffer{}, dbPath: dbPath}
	t.Cleanup(f.mcp.Close)

	approval := o.approval
	srv := catalogue.Server{
		Name:             "test",
		Command:          []string{"unused: dialled in process"},
		RequiresApproval: &approval,
		Effects:          map[string]agent.Effect{"echo": agent.EffectReadOnly},
	}
	if o.fourEyes {
		srv.Approval = catalogue.ApprovalOtherPerson
	}
	cat, err := catalogue.New(&catalogue.Config{Servers: []catalogue.Server{srv}}, &catalogue.Options{
		Dial:        func(context.Context, catalogue.Server) (mcp.Transport, error) { return f.mcp.Transport(), nil },
		Elicitation: o.elicit,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cat.Close(); err != nil {
			t.Errorf("closing the catalogue: %v", err)
		}
	})

	logger := slog.New(slog.NewTextHandler(f.logs, nil))
	var auditRuntime func(*agent.Config)
	if o.audit || o.tokens {
		f.audit = audit.New(st, bytes.Repeat([]byte{7}, audit.MinKeySize))
		auditRuntime = func(c *agent.Config) { c.Audit = f.audit } // decisions on calls
	}
	var inputs func(*agent.Config)
	if o.elicit {
		inputs = func(c *agent.Config) { c.Inputs, c.InputPollInterval = st, 20*time.Millisecond }
	}
	rt := newRuntime(t, f.store, cat, logger, o.idle, auditRuntime, inputs)
	f.rt = rt

	cfg := api.Config{Runtime: rt, Store: f.store, Actor: o.actor, Catalogue: cat, Logger: logger}
	if o.elicit {
		cfg.Inputs = st
	}
	if f.audit != nil {
		cfg.Audit = f.audit
	}
	if o.tokens {
		cfg.Tokens = st
		if tc, ok := st.TokenCanceller(); ok {
			cfg.TokenCancel = tc
		}
	}
	if o.configure != nil {
		o.configure(&cfg)
	}
	h, err := api.NewHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if o.wrap != nil {
		h = o.wrap(h)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	f.url = hs.URL
	f.http = hs.Client()
	f.client = &api.Client{BaseURL: hs.URL, HTTP: f.http}
	if o.tokens {
		f.client.Token = f.token("root", token.RoleAdmin)
	}
	return f
}

// token makes a token for name with role and returns its secret.
func (f *fixture) token(name string, role token.Role) string {
	f.t.Helper()
	secret, _, err := token.Create(context.Background(), f.sqlite, name, role)
	if err != nil {
		f.t.Fatal(err)
	}
	return secret
}

// as returns a client of the API that sends token.
func (f *fixture) as(token string) *api.Client {
	return &api.Client{BaseURL: f.url, HTTP: f.http, Token: token}
}

func newScriptModel(_ context.Context, req *agent.Request) (model.Model, error) {
	s, err := script.Parse(req.Script)
	if err != nil {
		return nil, err
	}
	return script.New(s)
}

// Scripts for the script model.
const (
	echoScript = `{"steps":[{"tool_calls":[{"name":"mcp_test_echo","arguments":{"text":"hello"}}]},{"text":"done"}]}`
	slowScript = `{"steps":[{"tool_calls":[{"name":"mcp_test_slow","arguments":{"ms":60000}}]},{"text":"done"}]}`
	// finalScript answers at once, calling nothing.
	finalScript = `{"steps":[{"text":"done"}]}`
)

func (f *fixture) create(scriptJSON string) *api.Run {
	f.t.Helper()
	run, err := f.client.CreateRun(context.Background(), &agent.Request{Prompt: "test", Script: json.RawMessage(scriptJSON)})
	if err != nil {
		f.t.Fatalf("CreateRun: %v", err)
	}
	return run
}

// waitStatus waits until the run is in status want.
func (f *fixture) waitStatus(id string, want agent.Status) *api.RunDetail {
	f.t.Helper()
	deadline := time.Now().Add(patience)
	for {
		d, err := f.client.GetRun(context.Background(), id)
		if err != nil {
			f.t.Fatalf("GetRun(%s): %v", id, err)
		}
		if d.Run.Status == string(want) {
			return d
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("run %s is %s (%s), want %s", id, d.Run.Status, d.Run.Reason, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitSteps waits until the run has recorded n steps.
func (f *fixture) waitSteps(id string, n int) *api.RunDetail {
	f.t.Helper()
	deadline := time.Now().Add(patience)
	for {
		d, err := f.client.GetRun(context.Background(), id)
		if err != nil {
			f.t.Fatalf("GetRun(%s): %v", id, err)
		}
		if len(d.Steps) >= n {
			return d
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("run %s has %d steps, want %d", id, len(d.Steps), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitToolStarted waits until the test server's tool has started.
func (f *fixture) waitToolStarted(tool string) mcptest.Record {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	rec, err := f.mcp.WaitFor(ctx, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted && r.Tool == tool })
	if err != nil {
		f.t.Fatalf("tool %s never started: %v", tool, err)
	}
	return rec
}

// raw makes a request without the client, for what the client cannot send.
func (f *fixture) raw(method, path, body string) (int, http.Header, []byte) {
	f.t.Helper()
	return rawRequest(f.t, f.http, f.url, method, path, body)
}

// rawRequest makes a request to base+path with hc, without api.Client.
func rawRequest(t *testing.T, hc *http.Client, base, method, path, body string) (int, http.Header, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, data
}

// newRuntime returns a runtime over st and tools, with the script model,
// closed at cleanup; unless idle, its workers run until then.
func newRuntime(t *testing.T, st agent.Store, tools agent.Tools, logger *slog.Logger, idle bool, adjust ...func(*agent.Config)) *agent.Runtime {
	t.Helper()
	cfg := agent.Config{
		Store:         st,
		Tools:         tools,
		NewModel:      newScriptModel,
		WatchInterval: 50 * time.Millisecond,
		ClaimInterval: 5 * time.Millisecond,
		ReapInterval:  time.Hour,
		Logger:        logger,
	}
	for _, f := range adjust {
		if f != nil {
			f(&cfg)
		}
	}
	rt, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	if !idle {
		runCtx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			rt.Run(runCtx)
		}()
		t.Cleanup(func() {
			stop()
			<-done
		})
	}
	return rt
}

// leaks are what an error message must never contain: the names of the
// layers beneath the API, Go's words for its types, file paths.
var leaks = []string{"sql", "agent:", "api:", "json:", "Go ", "struct", "andon.db", "/tmp", "internal detail", "goroutine"}

// checkError checks that a response is exactly {"error":{"code","message"}}
// with the given status and code, in JSON, and that its message leaks
// nothing. It returns the message.
func checkError(t *testing.T, status int, header http.Header, body []byte, wantStatus int, wantCode string) string {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("status %d, want %d; body %s", status, wantStatus, body)
	}
	if ct := header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatalf("error body is not a JSON object: %v\n%s", err, body)
	}
	if len(top) != 1 || top["error"] == nil {
		t.Fatalf("error body %s, want exactly one key, error", body)
	}
	var e map[string]string
	if err := json.Unmarshal(top["error"], &e); err != nil {
		t.Fatalf("error is not an object of strings: %v\n%s", err, body)
	}
	if len(e) != 2 || e["code"] != wantCode || e["message"] == "" {
		t.Fatalf("error %s, want exactly code %q and a message", top["error"], wantCode)
	}
	checkNoLeak(t, e["message"])
	return e["message"]
}

func checkNoLeak(t *testing.T, msg string) {
	t.Helper()
	for _, l := range leaks {
		if strings.Contains(msg, l) {
			t.Errorf("error message %q leaks %q", msg, l)
		}
	}
}

// checkAPIError checks an error from api.Client.
func checkAPIError(t *testing.T, err error, wantStatus int, wantCode string) {
	t.Helper()
	var ae *api.Error
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T), want an *api.Error with code %s", err, err, wantCode)
	}
	if ae.Status != wantStatus || ae.Code != wantCode || ae.Message == "" {
		t.Fatalf("error %+v, want status %d, code %s and a message", ae, wantStatus, wantCode)
	}
	checkNoLeak(t, ae.Message)
}

func TestHealth(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true})
	if err := f.client.Health(context.Background()); err != nil {
		t.Fatalf("Health: %v", err)
	}
	status, header, body := f.raw("GET", "/v1/health", "")
	if status != http.StatusOK || header.Get("Content-Type") != "application/json" {
		t.Fatalf("health: %d %q", status, header.Get("Content-Type"))
	}
	var h map[string]string
	if err := json.Unmarshal(body, &h); err != nil || h["status"] != "ok" {
		t.Errorf("health body %s (%v)", body, err)
	}
}

func TestUnknownEndpoint(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true})
	run := f.create(finalScript)
	for _, tt := range []struct{ method, path string }{
		{"GET", "/v1/nothing"},
		{"GET", "/v2/runs"},
		{"DELETE", "/v1/runs/" + run.ID},
		{"GET", "/v1/runs/" + run.ID + "/cancel"},
		{"POST", "/v1/runs/" + run.ID + "/restart"},
		{"PUT", "/v1/health"},
	} {
		status, header, body := f.raw(tt.method, tt.path, "")
		checkError(t, status, header, body, http.StatusNotFound, "not_found")
	}
}

func TestCreateRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true})
	status, header, body := f.raw("POST", "/v1/runs", `{"prompt":"hi","model":"script","script":`+finalScript+`}`)
	if status != http.StatusCreated || header.Get("Content-Type") != "application/json" {
		t.Fatalf("create: %d %q %s", status, header.Get("Content-Type"), body)
	}
	var run api.Run
	if err := json.Unmarshal(body, &run); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(run.ID, "run_") || run.Status != "queued" || run.Owner != "local" || run.CreatedAt.IsZero() {
		t.Errorf("created %+v", run)
	}
	var req agent.Request
	if err := json.Unmarshal(run.Request, &req); err != nil || req.Prompt != "hi" || req.Model != "script" {
		t.Errorf("the run's request %s (%v)", run.Request, err)
	}
	// The client says the same, and the run is stored.
	run2, err := f.client.CreateRun(context.Background(), &agent.Request{Prompt: "again", Script: json.RawMessage(finalScript)})
	if err != nil || run2.Status != "queued" || run2.ID == run.ID {
		t.Fatalf("CreateRun = %+v, %v", run2, err)
	}
	d, err := f.client.GetRun(context.Background(), run2.ID)
	if err != nil || d.Run.ID != run2.ID {
		t.Fatalf("GetRun = %+v, %v", d, err)
	}
}

func TestCreateRunRunsIt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{})
	run := f.create(echoScript)
	d := f.waitStatus(run.ID, agent.StatusCompleted)
	if d.Run.Reason != "completed" || d.Run.PendingEffect != "" || d.Run.StartedAt == nil || d.Run.FinishedAt == nil {
		t.Errorf("completed run %+v", d.Run)
	}
}

func TestCreateRunBadRequest(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true})
	for _, tt := range []struct{ name, body, wantIn string }{
		{"empty body", "", "empty"},
		{"bad JSON", `{"prompt":`, "ends too early"},
		{"not JSON", `prompt=hi`, "invalid JSON"},
		{"unknown field", `{"prompt":"hi","temperature":0.5}`, `unknown field "temperature"`},
		{"missing prompt", `{"script":` + finalScript + `}`, "prompt"},
		{"empty prompt", `{"prompt":""}`, "prompt"},
		{"prompt not a string", `{"prompt":42}`, `field "prompt" must be a JSON string`},
		{"not an object", `["hi"]`, "object"},
		{"trailing data", `{"prompt":"hi"} {"prompt":"again"}`, "more after"},
		{"too large", `{"prompt":"` + strings.Repeat("x", 2<<20) + `"}`, "larger than"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, header, body := f.raw("POST", "/v1/runs", tt.body)
			msg := checkError(t, status, header, body, http.StatusBadRequest, "bad_request")
			if !strings.Contains(msg, tt.wantIn) {
				t.Errorf("message %q does not say %q", msg, tt.wantIn)
			}
		})
	}
	// The client gets the same from a missing prompt.
	_, err := f.client.CreateRun(context.Background(), &agent.Request{Script: json.RawMessage(finalScript)})
	checkAPIError(t, err, http.StatusBadRequest, "bad_request")
	runs, err := f.client.ListRuns(context.Background(), agent.RunFilter{})
	if err != nil || len(runs) != 0 {
		t.Errorf("bad requests created runs: %+v, %v", runs, err)
	}
}

func TestListRuns(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true})
	ctx := context.Background()
	var ids []string // oldest first
	for range 4 {
		ids = append(ids, f.create(finalScript).ID)
		time.Sleep(2 * time.Millisecond) // distinct creation times, for the order
	}
	bobs, err := f.rt.Submit(ctx, "bob", &agent.Request{Prompt: "bob's", Script: json.RawMessage(finalScript)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.CancelRun(ctx, ids[1]); err != nil {
		t.Fatal(err)
	}

	ids = append(ids, bobs.ID)
	newestFirst := slices.Clone(ids)
	slices.Reverse(newestFirst)
	list := func(flt agent.RunFilter) []string {
		t.Helper()
		runs, err := f.client.ListRuns(ctx, flt)
		if err != nil {
			t.Fatalf("ListRuns(%+v): %v", flt, err)
		}
		out := []string{}
		for _, r := range runs {
			out = append(out, r.ID)
		}
		return out
	}
	for _, tt := range []struct {
		name string
		flt  agent.RunFilter
		want []string
	}{
		{"all", agent.RunFilter{}, newestFirst},
		{"limit", agent.RunFilter{Limit: 2}, newestFirst[:2]},
		{"before", agent.RunFilter{Before: newestFirst[1], Limit: 2}, newestFirst[2:4]},
		{"status", agent.RunFilter{Status: agent.StatusCancelled}, []string{ids[1]}},
		{"status queued", agent.RunFilter{Status: agent.StatusQueued}, []string{bobs.ID, ids[3], ids[2], ids[0]}},
		{"owner", agent.RunFilter{Owner: "bob"}, []string{bobs.ID}},
		{"owner and status", agent.RunFilter{Owner: "local", Status: agent.StatusCancelled}, []string{ids[1]}},
		{"nobody's", agent.RunFilter{Owner: "carol"}, []string{}},
	} {
		if got := list(tt.flt); !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}

	// A full page says where the next begins; the last page does not.
	var page struct {
		Runs       []api.Run `json:"runs"`
		NextBefore string    `json:"next_before"`
	}
	for before, paged := "", []string{}; ; before = page.NextBefore {
		_, _, body := f.raw("GET", "/v1/runs?limit=2&before="+before, "")
		page.NextBefore = ""
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Runs {
			paged = append(paged, r.ID)
		}
		if len(page.Runs) == 2 && page.NextBefore != page.Runs[1].ID {
			t.Fatalf("a full page: next_before %q, want %q", page.NextBefore, page.Runs[1].ID)
		}
		if page.NextBefore == "" {
			if !slices.Equal(paged, newestFirst) {
				t.Fatalf("paging by next_before gave %v, want %v", paged, newestFirst)
			}
			break
		}
	}

	// An empty list is [], not null.
	_, _, body := f.raw("GET", "/v1/runs?owner=carol", "")
	if !bytes.Contains(body, []byte(`"runs":[]`)) {
		t.Errorf("empty list: %s", body)
	}

	for _, q := range []string{"limit=0", "limit=-1", "limit=1001", "limit=ten", "limit=", "status=sleeping", "before=run_nosuchrun"} {
		status, header, body := f.raw("GET", "/v1/runs?"+q, "")
		if q == "limit=" {
			// An empty limit is no limit.
			if status != http.StatusOK {
				t.Errorf("%s: status %d", q, status)
			}
			continue
		}
		checkError(t, status, header, body, http.StatusBadRequest, "bad_request")
	}
}

func TestShowRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{})
	run := f.create(echoScript)
	f.waitStatus(run.ID, agent.StatusCompleted)
	d, err := f.client.GetRun(context.Background(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.Run.ID != run.ID || d.Run.Status != "completed" {
		t.Errorf("run %+v", d.Run)
	}
	kinds := []string{}
	for i, s := range d.Steps {
		if s.Seq != i+1 {
			t.Errorf("step %d has seq %d", i, s.Seq)
		}
		kinds = append(kinds, s.Kind)
	}
	if !slices.Equal(kinds, []string{"model", "tool", "model"}) {
		t.Fatalf("steps %v, want model, tool, model", kinds)
	}
	tool := d.Steps[1]
	var args bytes.Buffer
	json.Compact(&args, tool.Args)
	if tool.Tool != "mcp_test_echo" || tool.Outcome != "ok" || !strings.Contains(tool.Text, "hello") || args.String() != `{"text":"hello"}` {
		t.Errorf("tool step %+v", tool)
	}
	if d.Steps[2].Text != "done" {
		t.Errorf("final step %+v", d.Steps[2])
	}
	// Without an audit log the audit list is empty, not null.
	if d.Audit == nil || len(d.Audit) != 0 {
		t.Errorf("audit %v, want []", d.Audit)
	}
	_, _, body := f.raw("GET", "/v1/runs/"+run.ID, "")
	if !bytes.Contains(body, []byte(`"audit":[]`)) {
		t.Errorf("audit is not [] in %s", body)
	}

	_, err = f.client.GetRun(context.Background(), "run_nosuchrun")
	checkAPIError(t, err, http.StatusNotFound, "not_found")
	status, header, body := f.raw("GET", "/v1/runs/run_nosuchrun", "")
	checkError(t, status, header, body, http.StatusNotFound, "not_found")
}

func TestShowRunAuditRows(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{audit: true, idle: true})
	ctx := context.Background()
	a, b, c := f.create(finalScript), f.create(finalScript), f.create(finalScript)
	record := func(e audit.Entry) {
		t.Helper()
		if _, err := f.audit.Record(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	record(audit.Entry{Action: audit.ActionHTTPCall, RunID: a.ID, Method: "POST", Host: "tickets.example", Path: "/mcp?token=SECRET",
		Status: 200, OK: true, Reason: "ok", Duration: 1500 * time.Microsecond})
	record(audit.Entry{Action: audit.ActionHTTPCall, RunID: b.ID, Method: "POST", Host: "other.example", Path: "/mcp", Status: 200, OK: true})
	record(audit.Entry{Action: audit.ActionHTTPCallCancelled, RunID: a.ID, Method: "POST", Host: "tickets.example", Path: "/mcp", Reason: "cancelled"})
	record(audit.Entry{Action: audit.ActionHTTPCallCancelledBeforeSend, RunID: a.ID, Method: "POST", Host: "tickets.example", Path: "/mcp", Reason: "cancelled_before_send"})

	d, err := f.client.GetRun(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Audit) != 3 {
		t.Fatalf("run a has %d audit rows, want 3: %+v", len(d.Audit), d.Audit)
	}
	want := []struct {
		action string
		status int
		sent   bool
	}{
		{"http_call", 200, true},
		{"http_call_cancelled", 0, true},
		{"http_call_cancelled_before_send", 0, false},
	}
	for i, w := range want {
		r := d.Audit[i]
		if r.Action != w.action || r.Status != w.status || r.Sent != w.sent || r.Host != "tickets.example" || r.Path != "/mcp" || r.Method != "POST" {
			t.Errorf("audit row %d: %+v, want action %s status %d sent %v", i, r, w.action, w.status, w.sent)
		}
		if i > 0 && r.Seq <= d.Audit[i-1].Seq {
			t.Errorf("audit rows out of order: %+v", d.Audit)
		}
	}
	if d.Audit[0].DurationMS != 1.5 || !d.Audit[0].OK {
		t.Errorf("first row %+v", d.Audit[0])
	}
	_, _, body := f.raw("GET", "/v1/runs/"+a.ID, "")
	if bytes.Contains(body, []byte("SECRET")) {
		t.Errorf("a query string reached the API: %s", body)
	}
	if d, err := f.client.GetRun(ctx, b.ID); err != nil || len(d.Audit) != 1 || d.Audit[0].Host != "other.example" {
		t.Errorf("run b: %+v, %v", d, err)
	}
	if d, err := f.client.GetRun(ctx, c.ID); err != nil || d.Audit == nil || len(d.Audit) != 0 {
		t.Errorf("run c: %+v, %v; want no audit rows", d, err)
	}
}

func TestCancelRun(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{})
	ctx := context.Background()
	run := f.create(slowScript)
	started := f.waitToolStarted("slow")

	res, err := f.client.CancelRun(ctx, run.ID)
	if err != nil {
		t.Fatalf("CancelRun: %v", err)
	}
	if res.Run.ID != run.ID || res.Run.Status != "cancelled" || res.Run.Reason != "cancelled" || res.TookMS < 0 {
		t.Errorf("cancel result %+v", res)
	}
	// The slow tool is not classified: a non-idempotent write, fenced.
	if res.Run.PendingEffect != string(agent.EffectNonIdempotentWrite) {
		t.Errorf("pending_effect %q, want the fence stamped (non_idempotent_write)", res.Run.PendingEffect)
	}

	// The server was told, and its tool stopped.
	wctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	if _, err := f.mcp.WaitFor(wctx, func(r mcptest.Record) bool {
		return r.Kind == mcptest.ToolCancelled && r.ID == started.ID
	}); err != nil {
		t.Fatalf("the server's slow tool was never cancelled: %v", err)
	}
	notices := f.mcp.ReceivedMessages("notifications/cancelled")
	if len(notices) != 1 || !bytes.Contains(notices[0].Params, []byte(`"requestId":`+started.ID)) {
		t.Errorf("notifications/cancelled: %+v, want one naming request %s", notices, started.ID)
	}

	// The run records the cancelled call as its last step; the fence stays.
	d := f.waitSteps(run.ID, 2)
	last := d.Steps[len(d.Steps)-1]
	if last.Kind != "tool" || last.Tool != "mcp_test_slow" || last.Outcome != "cancelled" {
		t.Errorf("last step %+v, want the slow tool, cancelled", last)
	}
	if d.Run.Status != "cancelled" || d.Run.PendingEffect != string(agent.EffectNonIdempotentWrite) {
		t.Errorf("run %+v", d.Run)
	}

	// A second cancel loses.
	_, err = f.client.CancelRun(ctx, run.ID)
	checkAPIError(t, err, http.StatusConflict, "conflict")
	status, header, body := f.raw("POST", "/v1/runs/"+run.ID+"/cancel", "")
	checkError(t, status, header, body, http.StatusConflict, "conflict")
	// An unknown run is not found.
	_, err = f.client.CancelRun(ctx, "run_nosuchrun")
	checkAPIError(t, err, http.StatusNotFound, "not_found")
}

func TestCancelRunTookMS(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true})
	run := f.create(finalScript)
	status, _, body := f.raw("POST", "/v1/runs/"+run.ID+"/cancel", "")
	if status != http.StatusOK {
		t.Fatalf("cancel: %d %s", status, body)
	}
	var res map[string]json.RawMessage
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatal(err)
	}
	var took float64
	if err := json.Unmarshal(res["took_ms"], &took); err != nil || took < 0 {
		t.Errorf("took_ms %s (%v), want a number ≥ 0", res["took_ms"], err)
	}
	var r api.Run
	if err := json.Unmarshal(res["run"], &r); err != nil || r.Status != "cancelled" {
		t.Errorf("run %s (%v)", res["run"], err)
	}
}

func TestNotTheOwner(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true, actor: agent.Actor{ID: "alice"}})
	ctx := context.Background()
	bobs, err := f.rt.Submit(ctx, "bob", &agent.Request{Prompt: "bob's", Script: json.RawMessage(finalScript)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.client.CancelRun(ctx, bobs.ID)
	checkAPIError(t, err, http.StatusForbidden, "forbidden")
	_, err = f.client.Decide(ctx, bobs.ID, true)
	checkAPIError(t, err, http.StatusForbidden, "forbidden")
	// Alice's own run is hers to cancel.
	mine := f.create(finalScript)
	if mine.Owner != "alice" {
		t.Fatalf("owner %q, want alice", mine.Owner)
	}
	if _, err := f.client.CancelRun(ctx, mine.ID); err != nil {
		t.Errorf("cancelling her own run: %v", err)
	}
}

func TestApprove(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{approval: true})
	ctx := context.Background()
	run := f.create(echoScript)
	f.waitStatus(run.ID, agent.StatusWaitingForApproval)
	if calls := f.mcp.ReceivedMessages("tools/call"); len(calls) != 0 {
		t.Fatalf("the tool was called before it was approved: %+v", calls)
	}
	got, err := f.client.Decide(ctx, run.ID, true)
	if err != nil {
		t.Fatalf("approve: %v", err)
	}
	if got.ID != run.ID || got.Status == string(agent.StatusWaitingForApproval) {
		t.Errorf("approved run %+v", got)
	}
	d := f.waitStatus(run.ID, agent.StatusCompleted)
	var kinds []string
	for _, s := range d.Steps {
		kinds = append(kinds, s.Kind+":"+s.Outcome)
	}
	if !slices.Equal(kinds, []string{"model:", "approval:ok", "tool:ok", "model:"}) {
		t.Errorf("steps %v", kinds)
	}
	if calls := f.mcp.ReceivedMessages("tools/call"); len(calls) != 1 {
		t.Errorf("%d tools/call after the approval, want 1", len(calls))
	}
	// It is not waiting any more.
	_, err = f.client.Decide(ctx, run.ID, true)
	checkAPIError(t, err, http.StatusConflict, "conflict")
}

func TestDeny(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{approval: true})
	run := f.create(echoScript)
	f.waitStatus(run.ID, agent.StatusWaitingForApproval)
	status, _, body := f.raw("POST", "/v1/runs/"+run.ID+"/deny", "")
	if status != http.StatusOK {
		t.Fatalf("deny: %d %s", status, body)
	}
	d := f.waitStatus(run.ID, agent.StatusCompleted)
	var kinds []string
	for _, s := range d.Steps {
		kinds = append(kinds, s.Kind+":"+s.Outcome)
	}
	if !slices.Equal(kinds, []string{"model:", "approval:denied", "tool:denied", "model:"}) {
		t.Errorf("steps %v", kinds)
	}
	if !strings.Contains(d.Steps[2].Text, "denied") {
		t.Errorf("the model was told %q", d.Steps[2].Text)
	}
	if calls := f.mcp.ReceivedMessages("tools/call"); len(calls) != 0 {
		t.Errorf("a denied tool was called: %+v", calls)
	}
}

func TestDecideNotWaiting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("queued, completed, cancelled, unknown", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, options{idle: true})
		queued := f.create(finalScript)
		cancelled := f.create(finalScript)
		if _, err := f.client.CancelRun(ctx, cancelled.ID); err != nil {
			t.Fatal(err)
		}
		for _, approve := range []bool{true, false} {
			_, err := f.client.Decide(ctx, queued.ID, approve)
			checkAPIError(t, err, http.StatusConflict, "conflict")
			_, err = f.client.Decide(ctx, cancelled.ID, approve)
			checkAPIError(t, err, http.StatusConflict, "conflict")
			_, err = f.client.Decide(ctx, "run_nosuchrun", approve)
			checkAPIError(t, err, http.StatusNotFound, "not_found")
		}
		status, header, body := f.raw("POST", "/v1/runs/"+queued.ID+"/approve", "")
		checkError(t, status, header, body, http.StatusConflict, "conflict")
	})
	t.Run("running", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, options{})
		run := f.create(slowScript)
		f.waitToolStarted("slow")
		_, err := f.client.Decide(ctx, run.ID, true)
		checkAPIError(t, err, http.StatusConflict, "conflict")
		if _, err := f.client.CancelRun(ctx, run.ID); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("cancelled while waiting", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, options{approval: true})
		run := f.create(echoScript)
		f.waitStatus(run.ID, agent.StatusWaitingForApproval)
		if _, err := f.client.CancelRun(ctx, run.ID); err != nil {
			t.Fatal(err)
		}
		_, err := f.client.Decide(ctx, run.ID, true)
		checkAPIError(t, err, http.StatusConflict, "conflict")
		if calls := f.mcp.ReceivedMessages("tools/call"); len(calls) != 0 {
			t.Errorf("a cancelled run's call was made: %+v", calls)
		}
	})
}

func TestConcurrentApprovals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{approval: true})
	const n = 8
	for round := range 3 {
		run := f.create(echoScript)
		f.waitStatus(run.ID, agent.StatusWaitingForApproval)
		var wg sync.WaitGroup
		var ok, conflict atomic.Int32
		start := make(chan struct{})
		errs := make(chan error, n)
		for i := range n {
			approve := i%2 == 0 || round == 0 // round 0: approvals only; later: approvals and denials
			wg.Go(func() {
				<-start
				_, err := f.client.Decide(context.Background(), run.ID, approve)
				var ae *api.Error
				switch {
				case err == nil:
					ok.Add(1)
				case errors.As(err, &ae) && ae.Status == http.StatusConflict && ae.Code == "conflict":
					conflict.Add(1)
				default:
					errs <- err
				}
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("round %d: unexpected error %v", round, err)
		}
		if ok.Load() != 1 || conflict.Load() != n-1 {
			t.Errorf("round %d: %d approvals won and %d got conflict, want 1 and %d", round, ok.Load(), conflict.Load(), n-1)
		}
		d := f.waitStatus(run.ID, agent.StatusCompleted)
		decisions := 0
		for _, s := range d.Steps {
			if s.Kind == string(agent.StepApproval) {
				decisions++
			}
		}
		if decisions != 1 {
			t.Errorf("round %d: %d approval steps recorded, want 1", round, decisions)
		}
	}
}

// faultyStore is the real store, made to fail with an error that names
// internals when fail is set. It counts the reads the event stream makes.
type faultyStore struct {
	*sqlstore.Store
	fail      atomic.Bool
	runLists  atomic.Int64
	stepLists atomic.Int64
}

var errInternal = errors.New("sqlstore: internal detail: database /tmp/secret/andon.db is locked (SQLITE_BUSY)")

func (s *faultyStore) RunGet(ctx context.Context, id string) (*agent.Run, error) {
	if s.fail.Load() {
		return nil, errInternal
	}
	return s.Store.RunGet(ctx, id)
}

func (s *faultyStore) RunList(ctx context.Context, f agent.RunFilter) ([]*agent.Run, error) {
	s.runLists.Add(1)
	if s.fail.Load() {
		return nil, errInternal
	}
	return s.Store.RunList(ctx, f)
}

func (s *faultyStore) StepList(ctx context.Context, runID string) ([]*agent.Step, error) {
	s.stepLists.Add(1)
	return s.Store.StepList(ctx, runID)
}

func (s *faultyStore) RunInsert(ctx context.Context, run *agent.Run) error {
	if s.fail.Load() {
		return errInternal
	}
	return s.Store.RunInsert(ctx, run)
}

func TestInternalErrorsDoNotLeak(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true})
	run := f.create(finalScript)
	f.store.fail.Store(true)
	for _, tt := range []struct{ method, path, body string }{
		{"POST", "/v1/runs", `{"prompt":"hi"}`},
		{"GET", "/v1/runs", ""},
		{"GET", "/v1/runs/" + run.ID, ""},
		{"POST", "/v1/runs/" + run.ID + "/cancel", ""},
		{"POST", "/v1/runs/" + run.ID + "/approve", ""},
		{"POST", "/v1/runs/" + run.ID + "/deny", ""},
	} {
		status, header, body := f.raw(tt.method, tt.path, tt.body)
		msg := checkError(t, status, header, body, http.StatusInternalServerError, "internal")
		if msg != "internal error" {
			t.Errorf("%s %s: message %q", tt.method, tt.path, msg)
		}
	}
	// The detail goes to the log, for the operator.
	if !strings.Contains(f.logs.String(), "SQLITE_BUSY") {
		t.Errorf("the internal error was not logged:\n%s", f.logs.String())
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
