package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
	"github.com/andonhq/andon/sqlstore"
)

// toolsFixture is the API in front of a real runtime and a catalogue of
// three servers, on a real SQLite store that keeps the operators' tool
// settings:
//
//   - "test": an in-process mcptest server over a pipe (the stdio
//     transport), requires_approval false, echo read_only in andon.yaml;
//   - "web": an mcptest server over real HTTP on loopback, reached with
//     the default dialler, with a secret in its URL's query and headers;
//   - "off": disabled in andon.yaml.
type toolsFixture struct {
	t        *testing.T
	store    *sqlstore.Store
	mcp      *mcptest.Server
	web      *mcptest.Server
	cat      *catalogue.Catalogue
	url      string
	http     *http.Client
	client   *api.Client
	logs     *syncBuffer
	failWeb  atomic.Bool // dialling web fails, with an error that holds the secret
	webCalls atomic.Int32
}

const webSecret = "w3b-s3cret-token"

func newToolsFixture(t *testing.T, idle bool) *toolsFixture {
	t.Helper()
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, filepath.Join(t.TempDir(), "andon.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &toolsFixture{t: t, store: st, mcp: mcptest.NewServer(nil), web: mcptest.NewServer(nil), logs: &syncBuffer{}}
	t.Cleanup(f.mcp.Close)
	t.Cleanup(f.web.Close)
	webHTTP := httptest.NewServer(f.web.HTTPHandler(nil))
	t.Cleanup(webHTTP.Close)

	logger := slog.New(slog.NewTextHandler(f.logs, nil))
	off, noApproval := false, false
	cat, err := catalogue.New(&catalogue.Config{Servers: []catalogue.Server{
		{Name: "test", Command: []string{"mcptest", "serve"}, RequiresApproval: &noApproval,
			Effects: map[string]agent.Effect{"echo": agent.EffectReadOnly}},
		{Name: "web", URL: webHTTP.URL + "/mcp?key=" + webSecret, Headers: map[string]string{"X-Api-Key": webSecret}},
		{Name: "off", Command: []string{"mcptest", "serve"}, Enabled: &off},
	}}, &catalogue.Options{
		Dial: func(ctx context.Context, s catalogue.Server) (mcp.Transport, error) {
			switch {
			case s.Name == "test":
				return f.mcp.Transport(), nil
			case f.failWeb.Load():
				return nil, errors.New("dialling " + s.URL + " with X-Api-Key " + webSecret + ": connection refused")
			}
			f.webCalls.Add(1)
			return catalogue.DefaultDial(ctx, s)
		},
		Settings: st,
		Logger:   logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.cat = cat
	t.Cleanup(func() {
		if err := cat.Close(); err != nil {
			t.Errorf("closing the catalogue: %v", err)
		}
	})

	rt := newRuntime(t, st, cat, logger, idle)

	h, err := api.NewHandler(api.Config{Runtime: rt, Store: st, Catalogue: cat, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	f.url, f.http = hs.URL, hs.Client()
	f.client = &api.Client{BaseURL: hs.URL, HTTP: f.http}
	return f
}

// raw makes a request without the client.
func (f *toolsFixture) raw(method, path, body string) (int, http.Header, []byte) {
	f.t.Helper()
	return rawRequest(f.t, f.http, f.url, method, path, body)
}

func (f *toolsFixture) importServer(name string) []api.Tool {
	f.t.Helper()
	tools, err := f.client.ImportServer(context.Background(), name)
	if err != nil {
		f.t.Fatalf("importing %s: %v", name, err)
	}
	return tools
}

func (f *toolsFixture) patch(name string, p *api.ToolPatch) *api.Tool {
	f.t.Helper()
	tool, err := f.client.PatchTool(context.Background(), name, p)
	if err != nil {
		f.t.Fatalf("PATCH %s: %v", name, err)
	}
	return tool
}

// runTo starts a run of script and waits until check accepts it.
func (f *toolsFixture) runTo(script string, check func(d *api.RunDetail) bool) *api.RunDetail {
	f.t.Helper()
	ctx := context.Background()
	run, err := f.client.CreateRun(ctx, &agent.Request{Prompt: "test", Script: json.RawMessage(script)})
	if err != nil {
		f.t.Fatalf("CreateRun: %v", err)
	}
	deadline := time.Now().Add(patience)
	for {
		d, err := f.client.GetRun(ctx, run.ID)
		if err != nil {
			f.t.Fatalf("GetRun: %v", err)
		}
		if check(d) {
			return d
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("run %s never got there: %s (%s), %d steps", run.ID, d.Run.Status, d.Run.Reason, len(d.Steps))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func findTool(t *testing.T, tools []api.Tool, name string) api.Tool {
	t.Helper()
	for _, tool := range tools {
		if tool.Name == name {
			return tool
		}
	}
	t.Fatalf("no tool %s among %d", name, len(tools))
	return api.Tool{}
}

// keys returns the keys of a JSON object.
func keys(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s is not a JSON object: %v", raw, err)
	}
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestServersList(t *testing.T) {
	t.Parallel()
	f := newToolsFixture(t, true)
	status, header, body := f.raw("GET", "/v1/servers", "")
	if status != http.StatusOK || header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /v1/servers: %d %s\n%s", status, header.Get("Content-Type"), body)
	}
	if strings.Contains(string(body), webSecret) {
		t.Fatalf("GET /v1/servers shows a secret:\n%s", body)
	}
	var raw struct {
		Servers []json.RawMessage `json:"servers"`
	}
	if err := json.Unmarshal(body, &raw); err != nil || len(raw.Servers) != 3 {
		t.Fatalf("body %s (%v), want 3 servers", body, err)
	}
	// Exactly the contract's keys: url only for HTTP, command only for
	// stdio, error only after a failed import.
	for i, want := range [][]string{
		{"command", "enabled", "name", "tools", "transport"},
		{"enabled", "name", "tools", "transport", "url"},
		{"command", "enabled", "name", "tools", "transport"},
	} {
		if got := keys(t, raw.Servers[i]); !slices.Equal(got, want) {
			t.Errorf("server %d has keys %v, want %v", i, got, want)
		}
	}

	servers, err := f.client.Servers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []api.MCPServer{
		{Name: "test", Transport: "stdio", Command: []string{"mcptest", "serve"}, Enabled: true},
		{Name: "web", Transport: "http", Enabled: true}, // its URL: below
		{Name: "off", Transport: "stdio", Command: []string{"mcptest", "serve"}},
	}
	for i := range want {
		g, w := servers[i], want[i]
		if g.Name != w.Name || g.Transport != w.Transport || !slices.Equal(g.Command, w.Command) || g.Enabled != w.Enabled || g.Tools != 0 || g.Error != "" {
			t.Errorf("server %d = %+v, want %+v", i, g, w)
		}
	}
	if u := servers[1].URL; !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.HasSuffix(u, "/mcp") {
		t.Errorf("web's URL = %q, want the loopback URL without its query", u)
	}
	// Listing connected to nothing.
	if n := len(f.mcp.ReceivedMessages("")) + len(f.web.ReceivedMessages("")); n != 0 || f.webCalls.Load() != 0 {
		t.Errorf("listing the servers sent %d messages", n)
	}
}

func TestImportAndListTools(t *testing.T) {
	t.Parallel()
	f := newToolsFixture(t, true)
	ctx := context.Background()
	if tools, err := f.client.Tools(ctx, ""); err != nil || len(tools) != 0 {
		t.Fatalf("tools before any import = %d, %v; want none", len(tools), err)
	}
	// Listing says [] rather than null.
	if _, _, body := f.raw("GET", "/v1/tools", ""); !strings.Contains(string(body), `"tools":[]`) {
		t.Errorf("an empty list is %s, want []", body)
	}

	status, _, body := f.raw("POST", "/v1/servers/test/import", "")
	if status != http.StatusOK {
		t.Fatalf("import: %d %s", status, body)
	}
	var raw struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(body, &raw); err != nil || len(raw.Tools) != 15 {
		t.Fatalf("import returned %s (%v), want 15 tools", body, err)
	}
	want := []string{"description", "effect", "effect_source", "enabled", "name", "requires_approval", "server", "tool"}
	if got := keys(t, raw.Tools[0]); !slices.Equal(got, want) {
		t.Errorf("a tool has keys %v, want %v", got, want)
	}
	if lists := len(f.mcp.ReceivedMessages("tools/list")); lists == 0 {
		t.Error("the import sent no tools/list")
	}

	tools := f.importServer("web") // over real HTTP
	if len(tools) != 15 || f.webCalls.Load() == 0 {
		t.Fatalf("importing web: %d tools, %d dials", len(tools), f.webCalls.Load())
	}
	all, err := f.client.Tools(ctx, "")
	if err != nil || len(all) != 30 {
		t.Fatalf("GET /v1/tools = %d tools, %v; want 30", len(all), err)
	}
	for _, c := range []struct {
		name, server, tool, effect, source string
		approval                           bool
	}{
		{"mcp_test_echo", "test", "echo", "read_only", "config", false},
		{"mcp_test_slow", "test", "slow", "non_idempotent_write", "default", false},
		{"mcp_web_echo", "web", "echo", "non_idempotent_write", "default", true}, // untrusted annotation: ignored
	} {
		got := findTool(t, all, c.name)
		if got.Server != c.server || got.Tool != c.tool || got.Effect != c.effect || got.EffectSource != c.source ||
			got.RequiresApproval != c.approval || !got.Enabled || got.Description == "" {
			t.Errorf("%s = %+v", c.name, got)
		}
	}
	web, err := f.client.Tools(ctx, "web")
	if err != nil || len(web) != 15 || web[0].Server != "web" {
		t.Fatalf("GET /v1/tools?server=web = %d tools, %v", len(web), err)
	}
	servers, _ := f.client.Servers(ctx)
	if servers[0].Tools != 15 || servers[1].Tools != 15 || servers[2].Tools != 0 {
		t.Errorf("tool counts %d, %d, %d; want 15, 15, 0", servers[0].Tools, servers[1].Tools, servers[2].Tools)
	}
}

func TestImportAndListErrors(t *testing.T) {
	t.Parallel()
	f := newToolsFixture(t, true)
	for _, c := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"POST", "/v1/servers/nope/import", http.StatusNotFound, "not_found"},
		{"GET", "/v1/tools?server=nope", http.StatusNotFound, "not_found"},
		{"POST", "/v1/servers/off/import", http.StatusConflict, "conflict"},
		{"GET", "/v1/servers/test/import", http.StatusNotFound, "not_found"}, // no such endpoint
	} {
		status, header, body := f.raw(c.method, c.path, "")
		checkError(t, status, header, body, c.status, c.code)
	}

	// A server that fails: bad_gateway, naming it, without its secret.
	f.failWeb.Store(true)
	status, header, body := f.raw("POST", "/v1/servers/web/import", "")
	msg := checkError(t, status, header, body, http.StatusBadGateway, "bad_gateway")
	if !strings.Contains(msg, `server "web"`) || !strings.Contains(msg, "connection refused") || strings.Contains(msg, webSecret) {
		t.Errorf("message %q: want it to name web and why, without the secret", msg)
	}
	servers, err := f.client.Servers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if e := servers[1].Error; e == "" || strings.Contains(e, webSecret) || !strings.Contains(e, "connection refused") {
		t.Errorf("web's error = %q, want why, without the secret", e)
	}
	if web := servers[1]; web.Failures != 1 || web.FailedAt == nil || web.RetryAt == nil || !web.RetryAt.After(*web.FailedAt) {
		t.Errorf("web = %+v; want one failure, when, and a retry after it", web)
	}
	if strings.Contains(f.logs.String(), webSecret) {
		t.Error("the log holds the secret")
	}
	// Once it works, the error is gone.
	f.failWeb.Store(false)
	f.importServer("web")
	if servers, _ := f.client.Servers(context.Background()); servers[1].Error != "" || servers[1].Tools != 15 ||
		servers[1].Failures != 0 || servers[1].FailedAt != nil || servers[1].RetryAt != nil {
		t.Errorf("web after a good import: %+v", servers[1])
	}
}

func TestPatchTool(t *testing.T) {
	t.Parallel()
	f := newToolsFixture(t, true)
	ctx := context.Background()
	f.importServer("test")
	no, yes := false, true
	effect := "idempotent_write"

	got := f.patch("mcp_test_slow", &api.ToolPatch{Enabled: &no})
	if got.Name != "mcp_test_slow" || got.Enabled || got.Effect != "non_idempotent_write" || got.EffectSource != "default" ||
		got.UpdatedBy != "local" || got.UpdatedAt == nil {
		t.Errorf("after enabled false: %+v", got)
	}
	got = f.patch("mcp_test_slow", &api.ToolPatch{Effect: &effect})
	if got.Enabled || got.Effect != effect || got.EffectSource != "operator" || got.RequiresApproval {
		t.Errorf("after effect: %+v, want it still disabled", got)
	}
	got = f.patch("mcp_test_slow", &api.ToolPatch{RequiresApproval: &yes})
	if got.Enabled || got.Effect != effect || !got.RequiresApproval {
		t.Errorf("after requires_approval: %+v", got)
	}
	// All at once; and the operator's effect wins over andon.yaml's.
	ro := "non_idempotent_write"
	got = f.patch("mcp_test_echo", &api.ToolPatch{Enabled: &yes, Effect: &ro, RequiresApproval: &yes})
	if !got.Enabled || got.Effect != ro || got.EffectSource != "operator" || !got.RequiresApproval {
		t.Errorf("echo after a full patch: %+v", got)
	}

	// The list shows it, and the database keeps it, with who and when.
	slow := findTool(t, mustTools(t, f.client, "test"), "mcp_test_slow")
	if slow.Enabled || slow.Effect != effect || !slow.RequiresApproval || slow.UpdatedBy != "local" {
		t.Errorf("listed slow: %+v", slow)
	}
	rows, err := f.store.ToolSettingList(ctx)
	if err != nil || len(rows) != 2 {
		t.Fatalf("stored settings %v, %v; want 2", rows, err)
	}
	r := rows[1] // test/slow after test/echo
	if r.Server != "test" || r.Tool != "slow" || r.Enabled == nil || *r.Enabled || r.Effect != agent.EffectIdempotentWrite ||
		r.RequiresApproval == nil || !*r.RequiresApproval || r.UpdatedBy != "local" || r.UpdatedAt.IsZero() {
		t.Errorf("stored setting of slow: %+v", r)
	}
}

func mustTools(t *testing.T, c *api.Client, server string) []api.Tool {
	t.Helper()
	tools, err := c.Tools(context.Background(), server)
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

func TestPatchToolBadInput(t *testing.T) {
	t.Parallel()
	f := newToolsFixture(t, true)
	f.importServer("test")
	for _, c := range []struct {
		name, path, body string
		status           int
		code             string
	}{
		{"unknown field", "/v1/tools/mcp_test_echo", `{"enabled":false,"owner":"bob"}`, 400, "bad_request"},
		{"bad effect", "/v1/tools/mcp_test_echo", `{"effect":"readonly"}`, 400, "bad_request"},
		{"empty effect", "/v1/tools/mcp_test_echo", `{"effect":""}`, 400, "bad_request"},
		{"nothing", "/v1/tools/mcp_test_echo", `{}`, 400, "bad_request"},
		{"only nulls", "/v1/tools/mcp_test_echo", `{"enabled":null}`, 400, "bad_request"},
		{"no body", "/v1/tools/mcp_test_echo", ``, 400, "bad_request"},
		{"not JSON", "/v1/tools/mcp_test_echo", `enabled=false`, 400, "bad_request"},
		{"wrong type", "/v1/tools/mcp_test_echo", `{"enabled":"no"}`, 400, "bad_request"},
		{"not an object", "/v1/tools/mcp_test_echo", `[true]`, 400, "bad_request"},
		{"trailing data", "/v1/tools/mcp_test_echo", `{"enabled":false} {}`, 400, "bad_request"},
		{"unknown tool", "/v1/tools/mcp_test_nope", `{"enabled":false}`, 404, "not_found"},
		{"tool of a server not imported", "/v1/tools/mcp_web_echo", `{"enabled":false}`, 404, "not_found"},
	} {
		status, header, body := f.raw("PATCH", c.path, c.body)
		t.Run(c.name, func(t *testing.T) { checkError(t, status, header, body, c.status, c.code) })
	}
	if rows, err := f.store.ToolSettingList(context.Background()); err != nil || len(rows) != 0 {
		t.Errorf("refused patches stored %v, %v", rows, err)
	}
	if echo := findTool(t, mustTools(t, f.client, "test"), "mcp_test_echo"); !echo.Enabled || echo.Effect != "read_only" {
		t.Errorf("refused patches changed echo: %+v", echo)
	}
}

// The effect an operator sets decides the fence of the next call: a
// read_only tool runs unfenced, a write is fenced with its class.
func TestPatchedEffectDecidesTheFence(t *testing.T) {
	t.Parallel()
	f := newToolsFixture(t, false)
	f.importServer("test")
	for _, effect := range []string{"read_only", "idempotent_write", "non_idempotent_write"} {
		f.patch("mcp_test_slow", &api.ToolPatch{Effect: &effect})
		before := len(f.mcp.ReceivedMessages("tools/call"))
		d := f.runTo(slowScript, func(*api.RunDetail) bool { return len(f.mcp.ReceivedMessages("tools/call")) > before })
		d, err := f.client.GetRun(context.Background(), d.Run.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := effect
		if effect == "read_only" {
			want = "" // not fenced
		}
		if d.Run.PendingEffect != want {
			t.Errorf("slow set to %s: the run's fence reads %q while the call is on the wire, want %q", effect, d.Run.PendingEffect, want)
		}
		if _, err := f.client.CancelRun(context.Background(), d.Run.ID); err != nil {
			t.Fatal(err)
		}
	}
}

// A tool an operator disabled is not called: the run records a failed call
// saying why, and the server never hears of it.
func TestPatchedDisabledToolIsNotCalled(t *testing.T) {
	t.Parallel()
	f := newToolsFixture(t, false)
	f.importServer("test")
	no := false
	f.patch("mcp_test_echo", &api.ToolPatch{Enabled: &no})
	d := f.runTo(echoScript, func(d *api.RunDetail) bool { return d.Run.Status == string(agent.StatusCompleted) })
	var call *api.Step
	for i := range d.Steps {
		if d.Steps[i].Kind == string(agent.StepTool) {
			call = &d.Steps[i]
		}
	}
	if call == nil || call.Outcome != string(agent.OutcomeFailed) || !strings.Contains(call.Text, "disabled by an operator") {
		t.Fatalf("the call's step is %+v, want a failed call saying the tool is disabled", call)
	}
	for _, r := range f.mcp.ReceivedMessages("tools/call") {
		if strings.Contains(string(r.Params), `"echo"`) {
			t.Errorf("the server received a call of the disabled echo: %s", r.Params)
		}
	}
}

// An operator who says a tool's calls need approval makes the next run
// wait for it.
func TestPatchedApprovalMakesARunWait(t *testing.T) {
	t.Parallel()
	f := newToolsFixture(t, false)
	f.importServer("test")
	yes := true
	f.patch("mcp_test_echo", &api.ToolPatch{RequiresApproval: &yes})
	f.runTo(echoScript, func(d *api.RunDetail) bool { return d.Run.Status == string(agent.StatusWaitingForApproval) })
}
