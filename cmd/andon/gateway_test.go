package main

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// gatewayClient spawns `andon gateway --stdio` on dir's database and
// config, as a desktop client would, and connects to it.
func gatewayClient(t *testing.T, dir string) *mcp.Client {
	t.Helper()
	tr := mcp.Command(andonBin, "gateway", "--stdio", "--db", filepath.Join(dir, "andon.db"),
		"--key-file", filepath.Join(dir, "andon.key"), "--config", filepath.Join(dir, "andon.yaml"), "--watch-interval", "100ms")
	tr.Dir = dir
	ctx, cancel := context.WithTimeout(t.Context(), 2*patience)
	defer cancel()
	c, err := mcp.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connecting to andon gateway --stdio: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// gatewayRun waits for the one run of the database and returns it.
func gatewayRun(t *testing.T, p *serveProc) api.Run {
	t.Helper()
	for deadline := time.Now().Add(2 * patience); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		runs, err := p.client().ListRuns(t.Context(), agent.RunFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) == 1 {
			return runs[0]
		}
	}
	t.Fatal("the gateway's call never became a run")
	return api.Run{}
}

// The walkthrough of the gateway: a client spawns andon gateway --stdio
// and calls a slow tool; an operator cancels the call's run through andon
// serve, another process; the upstream server is told, the client is
// answered that an operator stopped it, and the audit row says so.
func TestGatewayStdioOperatorStop(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := filepath.Join(dir, "record.jsonl")
	p := startServe(t, dir, testConfig(rec, false))
	c := gatewayClient(t, dir)
	tools, err := c.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) == 0 || !strings.HasPrefix(tools[0].Name, "mcp_e2e_") {
		t.Fatalf("tools %v", tools)
	}
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := c.CallTool(context.Background(), "mcp_e2e_slow", map[string]any{"ms": 600000}, &mcp.CallOptions{Timeout: time.Hour})
		done <- answer{res, err}
	}()
	run := gatewayRun(t, p)
	p.waitRun(run.ID, hasStatus(agent.StatusRunning))
	waitRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted && r.Tool == "slow" })
	p.andon("cancel", run.ID).check(t, exitOK)

	var a answer
	select {
	case a = <-done:
	case <-time.After(2 * patience):
		t.Fatal("the client was not answered after the operator's cancel")
	}
	if a.err != nil || !a.res.IsError || !strings.Contains(a.res.Text(), "stopped by an operator") {
		t.Fatalf("client got %+v, %v; want a result saying an operator stopped it", a.res, a.err)
	}
	waitRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolCancelled && r.Tool == "slow" })
	d := p.waitRun(run.ID, hasStatus(agent.StatusCancelled))
	found := false
	for _, row := range d.Audit {
		found = found || row.Action == "tool_call" && strings.Contains(row.Reason, "cancelled")
	}
	if !found {
		t.Errorf("no tool_call audit row saying cancelled among %+v", d.Audit)
	}
}

// A client that exits with a call in flight cancels it: the upstream
// server is told and the run ends cancelled.
func TestGatewayStdioClientExitCancels(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := filepath.Join(dir, "record.jsonl")
	p := startServe(t, dir, testConfig(rec, false))
	c := gatewayClient(t, dir)
	go c.CallTool(context.Background(), "mcp_e2e_slow", map[string]any{"ms": 600000}, &mcp.CallOptions{Timeout: time.Hour})
	run := gatewayRun(t, p)
	waitRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted && r.Tool == "slow" })
	c.Close() // the gateway's stdin closes, as when a desktop client quits
	waitRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolCancelled && r.Tool == "slow" })
	p.waitRun(run.ID, hasStatus(agent.StatusCancelled))
}

// /mcp on andon serve: a bearer token of the operator role may call
// tools; no token gets 401.
func TestServeGatewayOverHTTP(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := filepath.Join(dir, "record.jsonl")
	p := startServe(t, dir, testConfig(rec, false))
	url := "http://" + p.addr + "/mcp"
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", resp.StatusCode)
	}
	for _, version := range []string{mcp.Version20251125, mcp.Version20260728} {
		hc := &http.Client{Transport: bearer{readToken(t, dir)}}
		c, err := mcp.Connect(t.Context(), mcp.HTTP(url, hc), &mcp.ClientOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatalf("%s: connect: %v", version, err)
		}
		res, err := c.CallTool(t.Context(), "mcp_e2e_echo", map[string]any{"text": "through serve"}, nil)
		c.Close()
		if err != nil || res.Text() != "through serve" {
			t.Errorf("%s: call: %+v, %v", version, res, err)
		}
	}
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func waitRecord(t *testing.T, rec string, match func(mcptest.Record) bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * patience); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		recs, _ := mcptest.ReadRecords(rec)
		for _, r := range recs {
			if match(r) {
				return
			}
		}
	}
	t.Fatalf("%s never held the record waited for", filepath.Base(rec))
}

// An operator lists the gateway's sessions and stops one whole: every call
// of it is cancelled, each upstream call told, each answered as stopped.
func TestGatewaySessionsAreListedAndStopped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := filepath.Join(dir, "record.jsonl")
	p := startServe(t, dir, testConfig(rec, false))
	c := gatewayClient(t, dir)
	answers := make(chan *mcp.CallToolResult, 2)
	for range 2 {
		go func() {
			res, _ := c.CallTool(context.Background(), "mcp_e2e_slow", map[string]any{"ms": 600000}, &mcp.CallOptions{Timeout: time.Hour})
			answers <- res
		}()
	}
	var sessions []api.GatewaySession
	for deadline := time.Now().Add(2 * patience); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var err error
		if sessions, err = p.client().ListGatewaySessions(t.Context()); err != nil {
			t.Fatal(err)
		}
		if len(sessions) == 1 && len(sessions[0].Calls) == 2 {
			break
		}
	}
	if len(sessions) != 1 || len(sessions[0].Calls) != 2 || sessions[0].Client != "andon" || sessions[0].Owner != "gateway" {
		t.Fatalf("sessions %+v, want one of client andon with two calls", sessions)
	}
	s := sessions[0]
	list := p.andon("sessions")
	list.check(t, exitOK)
	if !strings.Contains(list.stdout, s.Session) || strings.Count(list.stdout, "mcp_e2e_slow") != 2 {
		t.Errorf("andon sessions printed:\n%s", list.stdout)
	}
	show := p.andon("show", s.Calls[0].ID)
	show.check(t, exitOK)
	if !strings.Contains(show.stdout, "gateway call: mcp_e2e_slow") || !strings.Contains(show.stdout, s.Session) {
		t.Errorf("andon show printed:\n%s", show.stdout)
	}
	stop := p.andon("sessions", "--cancel", s.Session)
	stop.check(t, exitOK)
	if strings.Count(stop.stdout, "cancelled run_") != 2 {
		t.Errorf("andon sessions --cancel printed:\n%s", stop.stdout)
	}
	for range 2 {
		select {
		case res := <-answers:
			if res == nil || !res.IsError || !strings.Contains(res.Text(), "stopped by an operator") {
				t.Errorf("client got %+v", res)
			}
		case <-time.After(2 * patience):
			t.Fatal("a call of the stopped session was not answered")
		}
	}
	recs, err := mcptest.ReadRecords(rec)
	if err != nil {
		t.Fatal(err)
	}
	cancelled := 0
	for _, r := range recs {
		if r.Kind == mcptest.ToolCancelled && r.Tool == "slow" {
			cancelled++
		}
	}
	if cancelled != 2 {
		t.Errorf("upstream saw %d calls cancelled, want 2", cancelled)
	}
}
