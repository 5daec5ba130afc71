package main

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/andonhq/andon/agent"
)

// deepScript is a script whose one call's arguments nest arrays depth
// deep, 7 levels into the run request it becomes.
func deepScript(depth int) string {
	return `{"steps":[{"tool_calls":[{"name":"mcp_e2e_echo","arguments":{"a":` +
		strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}}]},{"text":"done"}]}`
}

// TestServeBoundsNestingAndHosts: through andon serve and the CLI, a
// script nested 5,000 deep is refused with the limit named; one at the
// limit runs, and andon show, show --json and runs --json print it at
// about its size. The API answers to loopback names and to the
// --allowed-host names only; another Host gets 421 naming the flag, and an
// --allowed-host with a port is a usage error.
func TestServeBoundsNestingAndHosts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startServe(t, dir, testConfig(filepath.Join(dir, "records.jsonl"), true), "--allowed-host", "andon.example.internal")
	t.Cleanup(p.stop)

	r := p.andon("run", "--script", writeScript(t, dir, "deep.json", deepScript(5000)))
	r.check(t, exitUsage)
	if !strings.Contains(r.stderr, "nested deeper than 64 levels (agent.MaxJSONDepth)") {
		t.Errorf("andon run of a script nested 5000 deep: stderr %q, want the limit named", r.stderr)
	}
	src := deepScript(agent.MaxJSONDepth - 7)
	r = p.andon("run", "--script", writeScript(t, dir, "at.json", src))
	r.check(t, exitOK)
	id := strings.TrimSpace(r.stdout)
	p.waitRun(id, hasStatus(agent.StatusWaitingForApproval))
	r = p.andon("show", id)
	r.check(t, exitOK)
	if !strings.Contains(r.stdout, "waiting for approval of a call to mcp_e2e_echo") || len(r.stdout) > 10*len(src) {
		t.Errorf("andon show printed %d bytes for a script of %d:\n%s", len(r.stdout), len(src), r.stdout)
	}
	for _, args := range [][]string{{"show", "--json", id}, {"runs", "--json"}} {
		r = p.andon(args...)
		r.check(t, exitOK)
		if !json.Valid([]byte(r.stdout)) || len(r.stdout) > 10*len(src) {
			t.Errorf("andon %s printed %d bytes (valid JSON %v) for a script of %d", strings.Join(args, " "), len(r.stdout), json.Valid([]byte(r.stdout)), len(src))
		}
	}

	for host, want := range map[string]int{
		"evil.example": http.StatusMisdirectedRequest, "andon.example.internal": http.StatusOK,
		"localhost:" + p.addr[strings.LastIndex(p.addr, ":")+1:]: http.StatusOK, p.addr: http.StatusOK,
	} {
		req, _ := http.NewRequest("GET", "http://"+p.addr+"/v1/health", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || want != http.StatusOK && !strings.Contains(string(body), "--allowed-host") {
			t.Errorf("Host %s: %d %s, want %d", host, resp.StatusCode, body, want)
		}
	}

	r = runAndonIn(t, t.TempDir(), "serve", "--addr", freeAddr(t), "--allowed-host", "andon.example.internal:8443")
	r.check(t, exitUsage)
	if !strings.Contains(r.stderr, "--allowed-host") {
		t.Errorf("--allowed-host with a port: stderr %q", r.stderr)
	}
}
