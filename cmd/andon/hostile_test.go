package main

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/audit"
)

// envHostileServer makes the test binary a stdio MCP server whose every
// word is hostile (hostileServer) instead of running tests.
const envHostileServer = "ANDON_TEST_HOSTILE_SERVER"

// hostileServer is a stdio MCP server (2025-11-25, tasks declared) that
// puts hostile in everything it says: tool names and descriptions, a tool's
// result, a JSON-RPC error's message, resources, templates, a resource's
// contents, prompts, a prompt's messages, completions, tasks, progress. It
// returns when stdin ends.
func hostileServer(in io.Reader, out io.Writer) int {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false) // what JSON leaves raw reaches the client raw
	for sc.Scan() {
		for _, reply := range hostileReplies(sc.Bytes()) {
			if enc.Encode(reply) != nil {
				return 1
			}
		}
	}
	return 0
}

// hostileReplies are the messages the hostile server sends for one it
// received: none for a notification.
func hostileReplies(msg []byte) []map[string]any {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
			Name            string `json:"name"`
			TaskID          string `json:"taskId"`
			Meta            struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &m) != nil || m.ID == nil {
		return nil
	}
	// In what andon prints one to a line, a newline would forge a line.
	forged := hostile + "\nforged: line"
	task := map[string]any{"taskId": hostile, "status": "working", "statusMessage": forged,
		"createdAt": "2026-01-02T03:04:05Z", "lastUpdatedAt": "2026-01-02T03:04:05Z", "ttl": nil}
	var result any
	var progress []map[string]any
	switch m.Method {
	case "initialize":
		result = map[string]any{"protocolVersion": m.Params.ProtocolVersion, "serverInfo": map[string]any{"name": "hostile", "version": "1"},
			"capabilities": map[string]any{"tools": map[string]any{}, "resources": map[string]any{}, "prompts": map[string]any{}, "completions": map[string]any{},
				"tasks": map[string]any{"list": map[string]any{}, "cancel": map[string]any{}, "requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}}}
	case "ping":
		result = map[string]any{}
	case "tools/list":
		result = map[string]any{"tools": []any{map[string]any{"name": "say", "title": hostile, "description": forged,
			"inputSchema": map[string]any{"type": "object"}}}}
	case "tools/call":
		if m.Params.Name == "refuse" {
			return []map[string]any{{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32000, "message": forged}}}
		}
		if m.Params.Meta.ProgressToken != nil {
			progress = append(progress, map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
				"params": map[string]any{"progressToken": m.Params.Meta.ProgressToken, "progress": 1, "total": 2, "message": hostile}})
		}
		result = map[string]any{"content": []any{
			map[string]any{"type": "text", "text": hostile},
			map[string]any{"type": "image", "mimeType": forged, "data": "AAAA"},
			map[string]any{"type": "resource_link", "uri": forged, "name": "link"},
			map[string]any{"type": hostile},
		}}
	case "resources/list":
		result = map[string]any{"resources": []any{map[string]any{"uri": "file:///" + hostile, "name": hostile, "title": hostile, "description": forged}}}
	case "resources/templates/list":
		result = map[string]any{"resourceTemplates": []any{map[string]any{"uriTemplate": "file:///{x}" + hostile, "name": hostile, "description": forged}}}
	case "resources/read":
		result = map[string]any{"contents": []any{
			map[string]any{"uri": "file:///a", "mimeType": "text/plain", "text": hostile},
			map[string]any{"uri": hostile, "mimeType": hostile, "blob": "AAAA"},
		}}
	case "prompts/list":
		result = map[string]any{"prompts": []any{map[string]any{"name": hostile, "description": forged,
			"arguments": []any{map[string]any{"name": hostile, "required": true}}}}}
	case "prompts/get":
		result = map[string]any{"description": hostile, "messages": []any{
			map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": hostile}},
			map[string]any{"role": hostile, "content": map[string]any{"type": "text", "text": "x"}},
		}}
	case "completion/complete":
		result = map[string]any{"completion": map[string]any{"values": []any{forged, "ok"}, "total": 2, "hasMore": false}}
	case "tasks/list":
		result = map[string]any{"tasks": []any{task}}
	case "tasks/get", "tasks/cancel":
		// The id asked for: the client checks it. The rest is hostile.
		task["taskId"] = m.Params.TaskID
		if m.Method == "tasks/cancel" {
			task["status"] = hostile // what tasks cancel prints of the answer
		}
		result = task
	default:
		return []map[string]any{{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found: " + hostile}}}
	}
	return append(progress, map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
}

// hostileHTTP serves the hostile server over Streamable HTTP (2025-03-26
// to 2025-11-25, without sessions): each POST is answered with JSON.
func hostileHTTP(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		replies := hostileReplies(body)
		if len(replies) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.Encode(replies[len(replies)-1]) // the answer; progress needs a stream
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// TestServerTextNeverReachesTheTerminalRaw: every command that prints what
// an MCP server says — its tools, a tool's result, a JSON-RPC error's
// message, resources, prompts, completions, tasks — prints it escaped, on
// stdout and on stderr, over stdio and over HTTP; --json too. What is
// printed one to a line stays one to a line, whatever newlines the server
// put in it.
func TestServerTextNeverReachesTheTerminalRaw(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	stdio := []string{"--protocol", "2025-11-25", "--stdio", shellQuote(exe)}
	httpURL := hostileHTTP(t)
	web := []string{"--protocol", "2025-11-25", "--url", httpURL}
	tests := []struct {
		args  []string
		code  int
		lines int // of stdout, where it is one line an item; 0: any
	}{
		{[]string{"call", "say"}, exitOK, 4}, // a text, an image, a link, a block of a kind unknown
		{[]string{"call", "--json", "say"}, exitOK, 0},
		{[]string{"call", "refuse"}, exitTransport, 0}, // the message is the server's
		{[]string{"tools"}, exitOK, 1},
		{[]string{"tools", "--json"}, exitOK, 0},
		{[]string{"resources", "list"}, exitOK, 1},
		{[]string{"resources", "list", "--templates"}, exitOK, 1},
		{[]string{"resources", "list", "--json"}, exitOK, 0},
		{[]string{"resources", "read", "file:///a"}, exitOK, 2},
		{[]string{"prompts", "list"}, exitOK, 1},
		{[]string{"prompts", "get", "p"}, exitOK, 2},
		{[]string{"prompts", "get", "--json", "p"}, exitOK, 0},
		{[]string{"complete", "--prompt", "p", "arg"}, exitOK, 2},
		{[]string{"tasks", "list"}, exitOK, 1},
		{[]string{"tasks", "get", "t1"}, exitOK, 1},
		{[]string{"tasks", "cancel", "t1"}, exitOK, 1},
	}
	for _, tt := range tests {
		for _, via := range []struct {
			name  string
			flags []string
		}{{"stdio", stdio}, {"http", web}} {
			t.Run(via.name+" "+strings.Join(tt.args, " "), func(t *testing.T) {
				t.Parallel()
				r := runAndonEnv(t, "", []string{envHostileServer + "=1"}, append(tt.args, via.flags...)...)
				r.check(t, tt.code)
				checkNeutralised(t, "stdout and stderr", r.stdout+r.stderr)
				if n := strings.Count(r.stdout, "\n"); tt.lines > 0 && n != tt.lines {
					t.Errorf("%d lines on stdout, want %d: a server's newline forged a line:\n%s", n, tt.lines, r.stdout)
				}
				if n := strings.Count(r.stderr, "\n"); tt.code != exitOK && n != 1 {
					t.Errorf("%d lines on stderr, want the error's one:\n%s", n, r.stderr)
				}
			})
		}
	}
}

// hostileServeConfig is an andon.yaml with two mcptest servers: e2e,
// whose calls need no approval (its elicit tool asks questions), and gate,
// whose calls do.
const hostileServeConfig = `servers:
  - name: e2e
    command: ["@andon", "mcptest", "serve", "-elicit"]
    env: {GORACE: "atexit_sleep_ms=0"}
    protocol: "2025-11-25"
    requires_approval: false
  - name: gate
    command: ["@andon", "mcptest", "serve"]
    env: {GORACE: "atexit_sleep_ms=0"}
    requires_approval: true
`

// hostileScript writes a model script (JSON, so that hostile goes in
// escaped) of steps into dir.
func hostileScript(t *testing.T, dir, name string, steps ...map[string]any) string {
	t.Helper()
	data, err := json.Marshal(map[string]any{"steps": steps})
	if err != nil {
		t.Fatal(err)
	}
	return writeScript(t, dir, name, string(data))
}

// hostileCall is a script step calling tool with args.
func hostileCall(tool string, args map[string]any) map[string]any {
	return map[string]any{"tool_calls": []any{map[string]any{"name": tool, "arguments": args}}}
}

// TestRunOutputsNeverReachTheTerminalRaw: what a model says, what a tool
// returns, what a server asks and logs, the arguments an approval names,
// and what a stored row holds reach the terminal escaped, through run
// --wait, show, runs, approve, deny, answer and audit list, and a newline
// in them forges no line.
func TestRunOutputsNeverReachTheTerminalRaw(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startServe(t, dir, hostileServeConfig)
	hostile := hostile + "\nforged: line"
	check := func(what string, r result, code int, visible bool) {
		t.Helper()
		r.check(t, code)
		if regexp.MustCompile(`(?m)^forged`).MatchString(r.stdout + r.stderr) {
			t.Errorf("%s: a newline in the text forged a line:\n%s", what, r.stdout+r.stderr)
		}
		if visible {
			checkNeutralised(t, what, r.stdout+r.stderr)
			return
		}
		// The command prints no text of the server's, only ids and
		// andon's words: nothing to show, and still nothing raw.
		if strings.ContainsAny(r.stdout+r.stderr, "\x1b\x07\r\x7f\u009b\u202e") {
			t.Errorf("%s: raw control characters in %q", what, r.stdout+r.stderr)
		}
	}

	// run --wait: the model's words and the tool's result, on stdout;
	// a failed call's tool name (the model's) on stderr.
	wait := hostileScript(t, dir, "wait.json",
		hostileCall("mcp_e2e_echo", map[string]any{"text": hostile}),
		hostileCall("mcp_x_"+hostile, map[string]any{}),
		map[string]any{"text": hostile})
	r := p.andon("run", "--wait", "--script", wait)
	check("run --wait", r, exitOK, true)
	if !strings.Contains(r.stdout, "tool mcp_e2e_echo → ok") || !strings.Contains(r.stderr, "tool calls failed") {
		t.Errorf("run --wait did not follow the run:\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
	}
	done := regexp.MustCompile(`(?m)^(run_[0-9a-f]+): completed`).FindStringSubmatch(r.stdout)
	if done == nil {
		t.Fatalf("no completed run in %q", r.stdout)
	}

	// show, approve: the arguments of a call that waits for approval.
	gated := hostileScript(t, dir, "gated.json", hostileCall("mcp_gate_echo", map[string]any{"text": hostile}), map[string]any{"text": "done"})
	r = p.andon("run", "--script", gated)
	r.check(t, exitOK)
	approved := strings.TrimSpace(r.stdout)
	p.waitRun(approved, hasStatus(agent.StatusWaitingForApproval))
	check("show, waiting for approval", p.andon("show", approved), exitOK, true)
	check("approve", p.andon("approve", approved), exitOK, true)
	p.waitRun(approved, hasStatus(agent.StatusCompleted))
	check("show, approved", p.andon("show", approved), exitOK, true)
	r = p.andon("run", "--script", gated)
	r.check(t, exitOK)
	denied := strings.TrimSpace(r.stdout)
	p.waitRun(denied, hasStatus(agent.StatusWaitingForApproval))
	check("deny", p.andon("deny", denied), exitOK, true)

	// show, answer: a server's question, its field's title, its log line.
	ask := hostileScript(t, dir, "ask.json", hostileCall("mcp_e2e_elicit", map[string]any{"message": hostile, "log": hostile,
		"schema": map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer", "title": hostile}}}}),
		map[string]any{"text": "done"})
	r = p.andon("run", "--script", ask)
	r.check(t, exitOK)
	asked := strings.TrimSpace(r.stdout)
	p.waitRun(asked, hasStatus(agent.StatusWaitingForInput))
	check("show, waiting for input", p.andon("show", asked), exitOK, true)
	check("answer", p.andon("answer", asked, "--field", "n=3"), exitOK, false)
	p.waitRun(asked, hasStatus(agent.StatusCompleted))
	r = p.andon("show", asked)
	check("show, answered", r, exitOK, true)
	if !strings.Contains(r.stdout, " log e2e [info] ") {
		t.Errorf("show has no log step:\n%s", r.stdout)
	}

	// runs, show: a stored row whose text someone with the database put
	// there.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "andon.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE runs SET reason = ?, error = ? WHERE id = ?`, hostile, hostile, done[1]); err != nil {
		t.Fatal(err)
	}
	check("runs", p.andon("runs"), exitOK, true)
	check("show, stored row", p.andon("show", done[1]), exitOK, true)
	p.stop()

	// audit list: a row's free columns.
	log := (&storeDir{dir: dir, db: filepath.Join(dir, "andon.db"), keyFile: filepath.Join(dir, "andon.key")}).auditLog(t)
	if _, err := log.Record(t.Context(), audit.Entry{Action: audit.ActionHTTPCall, RunID: "run_hostile", Method: hostile,
		Host: hostile, Path: "/" + hostile, Purpose: hostile, Reason: hostile}); err != nil {
		t.Fatal(err)
	}
	check("audit list", runAndonIn(t, dir, "audit", "list", "--run", "run_hostile", "--db", filepath.Join(dir, "andon.db"),
		"--key-file", filepath.Join(dir, "andon.key")), exitOK, true)
}
