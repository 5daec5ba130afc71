package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
)

// TestServeWithADeadServer: serve with a configured stdio server that never
// answers (sleep) beside a healthy one. A run on the healthy server
// completes; a run whose model asks for the dead server's tool completes
// too, and `andon show` says which server failed and in which leg; the
// servers listing says when it is tried again; the metric counts the
// failure once.
func TestServeWithADeadServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := filepath.Join(dir, "records.jsonl")
	p := startServe(t, dir, testConfig(rec, false)+`  - name: dead
    command: ["sleep", "3600"]
    protocol: "2025-11-25"
    requires_approval: false
    timeout: 2s
`)
	defer p.stop()

	echo := writeScript(t, dir, "echo.yaml", echoScriptYAML)
	r := p.andon("run", "--script", echo)
	r.check(t, exitOK)
	healthy := strings.TrimSpace(r.stdout)
	if d := p.waitRun(healthy, finished); d.Run.Status != string(agent.StatusCompleted) {
		t.Errorf("the run on the healthy server is %s (%s)", d.Run.Status, d.Run.Error)
	}

	dead := writeScript(t, dir, "dead.yaml", `steps:
  - tool_calls:
      - name: mcp_dead_echo
        arguments: {text: anyone there}
  - text: The dead server did not answer.
`)
	r = p.andon("run", "--script", dead)
	r.check(t, exitOK)
	id := strings.TrimSpace(r.stdout)
	p.waitRun(id, finished)
	r = p.andon("show", id)
	r.check(t, exitOK)
	for _, want := range []string{"status: completed", "tool mcp_dead_echo → failed", `Server "dead": timed out during initialize`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("andon show does not say %q:\n%s", want, r.stdout)
		}
	}

	servers, err := p.client().Servers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var info api.MCPServer
	for _, s := range servers {
		if s.Name == "dead" {
			info = s
		}
	}
	// At least one failure: on a loaded machine the runs above can outlast
	// the 5 s back-off, and the server is then tried, and fails, again
	// (catalogue's tests assert what happens within the back-off).
	if !strings.Contains(info.Error, "initialize") || info.Failures < 1 || info.RetryAt == nil {
		t.Errorf("GET /v1/servers says of the dead server %+v; want its error, its failures, when it is tried again", info)
	}
	m := scrapeMetrics(t, "http://"+p.addr+"/metrics", readToken(t, dir))
	if n := m[`andon_server_import_failures_total{server="dead"}`]; n < 1 {
		t.Errorf("andon_server_import_failures_total of the dead server = %v, want at least 1", n)
	}
}

// finished reports whether a run has ended.
func finished(d *api.RunDetail) bool { return agent.Status(d.Run.Status).Terminal() }
