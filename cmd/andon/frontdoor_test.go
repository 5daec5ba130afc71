package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/andonhq/andon/mcp"
)

// runAndonEnv runs the andon binary in dir with extra environment
// variables ("K=V") and waits for it.
func runAndonEnv(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*patience)
	defer cancel()
	cmd := exec.CommandContext(ctx, andonBin, args...)
	cmd.Dir = dir
	// ANDON_API from the environment of the test would change what the
	// commands reach: each test says what it wants.
	cmd.Env = append(withoutEnv(os.Environ(), envAPI), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return result{code: exitCode(t, err), stdout: stdout.String(), stderr: stderr.String()}
}

func withoutEnv(environ []string, name string) []string {
	var out []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// TestServeOnBusyPortNamesAddr: with its port taken, serve fails saying
// so and naming --addr and ANDON_API, before it writes anything (no demo
// config, key, database or token in the directory).
func TestServeOnBusyPortNamesAddr(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	r := runAndonIn(t, dir, "serve", "--addr", ln.Addr().String())
	r.check(t, exitFailure)
	for _, want := range []string{"andon: cannot serve on " + ln.Addr().String() + ": address already in use", "--addr 127.0.0.1:7711", "ANDON_API=http://127.0.0.1:7711"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("serve on a busy port left files behind: %v", names)
	}
}

// TestAPIAddressForms: the commands reach serve at --api given as
// host:port or as the URL serve prints (with or without a trailing slash),
// or at ANDON_API when --api is not given; --api wins over ANDON_API.
func TestAPIAddressForms(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startServe(t, dir, testConfig(recordFile(t), false))
	dead := freeAddr(t)
	echo := writeScript(t, dir, "echo.yaml", echoScriptYAML)
	for _, c := range []struct {
		name string
		env  []string
		args []string
	}{
		{"host:port", nil, []string{"--api", p.addr}},
		{"URL as serve prints it", nil, []string{"--api", "http://" + p.addr}},
		{"URL with a slash", nil, []string{"--api", "http://" + p.addr + "/"}},
		// A POST, which a redirect of "//v1/runs" would turn into a GET.
		{"URL with a slash, run", nil, []string{"run", "--script", echo, "--api", "http://" + p.addr + "/"}},
		{"ANDON_API URL", []string{envAPI + "=http://" + p.addr}, nil},
		{"ANDON_API host:port", []string{envAPI + "=" + p.addr}, nil},
		{"--api over ANDON_API", []string{envAPI + "=http://" + dead}, []string{"--api", "http://" + p.addr}},
	} {
		args := c.args
		if len(args) == 0 || args[0] != "run" {
			args = append([]string{"runs"}, args...)
		}
		r := runAndonEnv(t, dir, c.env, args...)
		if r.code != exitOK || !strings.HasPrefix(r.stdout, "RUN ") && !strings.HasPrefix(r.stdout, "run_") {
			t.Errorf("%s: exit %d\nstdout: %s\nstderr: %s", c.name, r.code, r.stdout, r.stderr)
		}
	}
	// ANDON_API naming nothing: the error names that address, not the
	// default one.
	r := runAndonEnv(t, dir, []string{envAPI + "=http://" + dead}, "runs")
	r.check(t, exitTransport)
	if !strings.Contains(r.stderr, "no andon serve answers on http://"+dead) {
		t.Errorf("stderr %q does not name ANDON_API's address", r.stderr)
	}
	p.stop()
}

// TestAPIAddressRefused: an --api or ANDON_API that is no address is a
// usage error naming the flag or variable, and a token put in it as
// userinfo is never printed.
func TestAPIAddressRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		env      []string
		args     []string
		wantFrom string
	}{
		{nil, []string{"--api", "ftp://127.0.0.1:7700"}, "--api"},
		{nil, []string{"--api", "127.0.0.1"}, "--api"},
		{nil, []string{"--api", "http://127.0.0.1:7700/?x=1"}, "--api"},
		{nil, []string{"--api", "http://andon_secret123@127.0.0.1:7700"}, "--api"},
		{nil, []string{"--api", "andon_secret123@127.0.0.1:7700"}, "--api"},
		{[]string{envAPI + "=http://"}, nil, envAPI},
	} {
		r := runAndonEnv(t, dir, c.env, append([]string{"runs"}, c.args...)...)
		r.check(t, exitUsage)
		if !strings.HasPrefix(r.stderr, "andon: runs: "+c.wantFrom+": ") {
			t.Errorf("%v %v: stderr %q, want it to name %s", c.env, c.args, r.stderr, c.wantFrom)
		}
		if strings.Contains(r.stderr, "secret123") {
			t.Errorf("%v: the userinfo was printed: %q", c.args, r.stderr)
		}
	}
}

// TestMCPTestServeHelp: andon mcptest serve -h answers in the help style of
// every andon command, and a bad flag points at it, without the flag
// package's bare "Usage of mcptest:".
func TestMCPTestServeHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"mcptest", "serve", "-h"}, {"mcptest", "serve", "-http", "127.0.0.1:0", "--help"}, {"mcptest", "-h"}} {
		r := runAndon(t, args...)
		r.check(t, exitOK)
		if !strings.HasPrefix(r.stdout, "usage: andon mcptest serve ") || !strings.Contains(r.stdout, "-generations LIST") || strings.Contains(r.stdout+r.stderr, "Usage of") {
			t.Errorf("andon %v: stdout %q stderr %q", args, r.stdout, r.stderr)
		}
	}
	r := runAndon(t, "mcptest", "serve", "-nope")
	r.check(t, exitUsage)
	if !strings.Contains(r.stderr, "-nope") || !strings.Contains(r.stderr, "Run 'andon mcptest serve -h' for help.") || strings.Contains(r.stderr, "Usage of") {
		t.Errorf("a bad flag: stderr %q", r.stderr)
	}
}

// TestHTTPPinnedProtocolPinsGeneration: over HTTP, --protocol pins the
// transport generation with the revision; a server without that generation
// refuses the connection, and the error says which generation the pin
// needed. mcptest's default (stateless,sessions) refuses 2024-11-05, and
// serves it with sse added.
func TestHTTPPinnedProtocolPinsGeneration(t *testing.T) {
	t.Parallel()
	cases := []struct {
		generations []string
		pin         string
		want        string // in stderr; "" means the call succeeds
	}{
		{nil, mcp.Version20241105, "--protocol 2024-11-05 speaks HTTP+SSE (a GET event stream) over HTTP"},
		{[]string{genStateless, genSessions, genSSE}, mcp.Version20241105, ""},
		{[]string{genStateless}, mcp.Version20250618, "--protocol 2025-06-18 speaks Streamable HTTP with sessions over HTTP"},
		{[]string{genSessions}, mcp.Version20250618, ""},
		{[]string{genSessions}, mcp.Version20260728, "--protocol 2026-07-28 speaks stateless Streamable HTTP over HTTP"},
		{[]string{genStateless}, mcp.Version20260728, ""},
	}
	for _, c := range cases {
		url := serveHTTP(t, recordFile(t), c.generations...)
		r := runAndon(t, "call", "--url", url, "--protocol", c.pin, "echo", `{"text":"pinned"}`)
		if c.want == "" {
			if r.code != exitOK || r.stdout != "pinned\n" {
				t.Errorf("%v, pinned %s: exit %d, stdout %q, stderr %q", c.generations, c.pin, r.code, r.stdout, r.stderr)
			}
			continue
		}
		if r.code != exitTransport || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v, pinned %s: exit %d, stderr %q, want exit 3 and %q", c.generations, c.pin, r.code, r.stderr, c.want)
		}
	}
}

// TestRunWaitSaysACallFailed: a script that names a tool no server offers
// gets a failed step, which the model is told of; the script plays on and
// the run completes, and run --wait says on stderr that it did not do all
// it was asked, naming the step and the tool.
func TestRunWaitSaysACallFailed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startServe(t, dir, testConfig(recordFile(t), false))
	typo := writeScript(t, dir, "typo.yaml", `steps:
  - tool_calls:
      - name: mcp_e2e_ehco
        arguments: {text: hi}
  - text: Echoed.
`)
	r := p.andon("run", "--wait", "--script", typo)
	r.check(t, exitOK)
	for _, want := range []string{`2 tool mcp_e2e_ehco → failed`, `There is no tool called "mcp_e2e_ehco"`, ": completed (completed)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout does not say %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "completed, but 1 of its 1 tool calls failed (step 2 mcp_e2e_ehco)") {
		t.Errorf("stderr does not say the call failed:\n%s", r.stderr)
	}

	echo := writeScript(t, dir, "echo.yaml", echoScriptYAML)
	r = p.andon("run", "--wait", "--script", echo)
	r.check(t, exitOK)
	if strings.Contains(r.stderr, "failed") {
		t.Errorf("a run whose calls all succeeded: stderr %q", r.stderr)
	}
	p.stop()
}
