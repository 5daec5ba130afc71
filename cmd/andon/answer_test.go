package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/mcp/mcptest"
)

// elicitConfig is an andon.yaml with one server, "e2e": this andon
// binary's mcptest server with its elicit tool, over stdio, recording to
// record, pinned to protocol.
func elicitConfig(record, protocol string) string {
	return fmt.Sprintf(`servers:
  - name: e2e
    command: ["@andon", "mcptest", "serve", "-elicit", "-record", %q]
    env: {GORACE: "atexit_sleep_ms=0"}
    protocol: %q
    requires_approval: false
`, record, protocol)
}

const elicitScriptYAML = `steps:
  - tool_calls:
      - name: mcp_e2e_elicit
        arguments:
          message: How many replicas?
          log: "planning the rollout \e[31m"
          schema: {type: object, properties: {replicas: {type: integer, title: Replicas}, token: {type: string, format: password}}, required: [replicas]}
  - text: Deployed.
`

// elicitAnswers returns what the server was told of its questions.
func elicitAnswers(t *testing.T, rec string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range readRecords(t, rec) {
		if r.Kind == mcptest.ElicitAnswered {
			var m map[string]any
			json.Unmarshal(r.Params, &m)
			out = append(out, m)
		}
	}
	return out
}

// A real andon serve and a real server that elicits: andon show shows the
// question and its fields, andon answer --field types the values by the
// schema and the server gets them, and the run goes on; andon decline
// tells the server decline; andon cancel while a run waits tells the
// server cancel (on 2025-11-25: the question answered cancel, and the call
// cancelled on the wire); answer -h documents itself; the audit row names
// the fields, never the values.
func TestAnswerAndDeclineThroughTheCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := filepath.Join(dir, "records.jsonl")
	p := startServe(t, dir, elicitConfig(rec, "2025-11-25"))
	script := writeScript(t, dir, "elicit.yaml", elicitScriptYAML)

	r := p.andon("answer", "-h")
	r.check(t, exitOK)
	for _, want := range []string{"usage: andon answer RUN", "--field", "--json", "never their values", "never opens"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("andon answer -h does not say %q:\n%s", want, r.stdout)
		}
	}

	r = p.andon("run", "--script", script)
	r.check(t, exitOK)
	id := strings.TrimSpace(r.stdout)
	p.waitRun(id, hasStatus(agent.StatusWaitingForInput))
	r = p.andon("show", id)
	r.check(t, exitOK)
	for _, want := range []string{"waiting for input: server e2e asks (during mcp_e2e_elicit", "How many replicas?",
		"field replicas (integer, required) Replicas", "field token (password)", "andon answer " + id} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("andon show does not say %q:\n%s", want, r.stdout)
		}
	}
	r = p.andon("answer", id, "--field", "replicas=three")
	r.check(t, exitUsage)
	r = p.andon("answer", id, "--json", `{"token":"pw-9c1e"}`)
	r.check(t, exitUsage) // the API refused it: replicas is required
	if strings.Contains(r.stderr, "pw-9c1e") || !strings.Contains(r.stderr, "required") {
		t.Errorf("a refused answer's error: %q; want the keyword, never the value", r.stderr)
	}
	r = p.andon("answer", id, "--field", "replicas=3", "--field", "token=pw-9c1e")
	r.check(t, exitOK)
	if !strings.HasPrefix(r.stdout, id+": ") || !strings.Contains(r.stdout, "answered e2e's question") {
		t.Errorf("andon answer printed %q", r.stdout)
	}
	d := p.waitRun(id, hasStatus(agent.StatusCompleted))
	if got := elicitAnswers(t, rec); len(got) != 1 || got[0]["action"] != "accept" ||
		fmt.Sprint(got[0]["content"]) != "map[replicas:3 token:pw-9c1e]" {
		t.Fatalf("the server was told %v; want accept with replicas 3 (a number) and the token", got)
	}
	for _, row := range d.Audit {
		if row.Action == "input_answered" && (strings.Contains(row.Path, "pw-9c1e") || !strings.Contains(row.Path, "fields=replicas,token")) {
			t.Errorf("audit row %+v; want the fields named, no value", row)
		}
	}
	r = p.andon("show", id)
	for _, line := range strings.Split(r.stdout, "\n") {
		// The tool's result is the server's to say (mcptest echoes the
		// answer); what andon records of the answer never holds a value.
		if strings.Contains(line, " input ") && (strings.Contains(line, "pw-9c1e") || !strings.Contains(line, "fields: replicas, token")) {
			t.Errorf("andon show's input step: %q; want the fields named, no value", line)
		}
	}
	if !strings.Contains(r.stdout, "input_answered") {
		t.Errorf("andon show of the answered run has no input_answered row:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "log e2e [info] mcptest: planning the rollout") || strings.Contains(r.stdout, "\x1b") {
		t.Errorf("andon show does not show the server's log message as printable text:\n%q", r.stdout)
	}
	r = p.andon("answer", id, "--field", "replicas=4")
	r.check(t, exitFailure)

	// Decline.
	r = p.andon("run", "--script", script)
	r.check(t, exitOK)
	declined := strings.TrimSpace(r.stdout)
	p.waitRun(declined, hasStatus(agent.StatusWaitingForInput))
	r = p.andon("decline", declined)
	r.check(t, exitOK)
	p.waitRun(declined, hasStatus(agent.StatusCompleted))
	if got := elicitAnswers(t, rec); len(got) != 2 || got[1]["action"] != "decline" {
		t.Fatalf("the server was told %v; want a decline second", got)
	}

	// Cancel while waiting.
	r = p.andon("run", "--script", script)
	r.check(t, exitOK)
	cancelled := strings.TrimSpace(r.stdout)
	p.waitRun(cancelled, hasStatus(agent.StatusWaitingForInput))
	r = p.andon("cancel", cancelled)
	r.check(t, exitOK)
	p.waitRun(cancelled, hasStatus(agent.StatusCancelled))
	waitForRecord(t, rec, func(r mcptest.Record) bool {
		return r.Kind == mcptest.ElicitAnswered && strings.Contains(string(r.Params), "cancel")
	})
	waitForRecord(t, rec, func(r mcptest.Record) bool { return r.Method == "notifications/cancelled" })
	p.stop()
}
