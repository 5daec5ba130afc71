package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
)

// reusedIDScriptYAML asks for echo twice under one id, as a provider that
// numbers calls per response does.
const reusedIDScriptYAML = `steps:
  - tool_calls:
      - {name: mcp_e2e_echo, arguments: {text: staging}, id: call_0}
  - tool_calls:
      - {name: mcp_e2e_echo, arguments: {text: production}, id: call_0}
  - text: Echoed.
`

// andon show names the call a run waits on — tool, arguments, digest —
// andon approve says which call it approved, the next call with the same
// id waits for its own decision, and the audit log has a row per decision.
func TestShowAndApproveNameTheCall(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := filepath.Join(dir, "records.jsonl")
	p := startServe(t, dir, testConfig(rec, true))
	script := writeScript(t, dir, "reused.yaml", reusedIDScriptYAML)

	r := p.andon("run", "--script", script)
	r.check(t, exitOK)
	id := strings.TrimSpace(r.stdout)
	p.waitRun(id, hasStatus(agent.StatusWaitingForApproval))
	staging := agent.ArgsDigest(json.RawMessage(`{"text":"staging"}`))
	r = p.andon("show", id)
	r.check(t, exitOK)
	for _, want := range []string{
		"waiting for approval of a call to mcp_e2e_echo with arguments:",
		`"text": "staging"`,
		`(step 1, call 1, model's id "call_0", args ` + staging + ")",
		"decide with: andon approve " + id,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("andon show does not say %q:\n%s", want, r.stdout)
		}
	}

	r = p.andon("approve", id)
	r.check(t, exitOK)
	if want := `(approved mcp_e2e_echo {"text":"staging"}, step 1, call 1)`; !strings.HasPrefix(r.stdout, id+": ") || !strings.Contains(r.stdout, want) {
		t.Errorf("andon approve printed %q; want it to name %s", r.stdout, want)
	}
	d := p.waitRun(id, func(d *api.RunDetail) bool { return d.Run.Pending != nil && d.Run.Pending.Step > 1 })
	if d.Run.Pending.CallID != "call_0" || d.Run.Pending.ArgsDigest != agent.ArgsDigest(json.RawMessage(`{"text":"production"}`)) {
		t.Fatalf("the second pending call = %+v; want the production call, id call_0", d.Run.Pending)
	}
	if texts := echoedTexts(t, rec); strings.Join(texts, ",") != "staging" {
		t.Fatalf("the server echoed %q; want staging only: production waits for its own approval", texts)
	}
	r = p.andon("show", id)
	r.check(t, exitOK)
	if !strings.Contains(r.stdout, `"text": "production"`) || !strings.Contains(r.stdout, `approval mcp_e2e_echo {"text":"staging"} → ok, approved by`) {
		t.Errorf("andon show of the second wait:\n%s", r.stdout)
	}

	r = p.andon("deny", id)
	r.check(t, exitOK)
	p.waitRun(id, hasStatus(agent.StatusCompleted))
	if texts := echoedTexts(t, rec); strings.Join(texts, ",") != "staging" {
		t.Fatalf("the server echoed %q; the denied production call went out", texts)
	}
	r = p.andon("show", id)
	r.check(t, exitOK)
	for _, want := range []string{"decisions:", "step 1 call 1 mcp_e2e_echo approved by", "call 1 mcp_e2e_echo denied by",
		"call_approved", "call_denied"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("andon show of the finished run does not say %q:\n%s", want, r.stdout)
		}
	}
	p.stop()
}

// echoedTexts returns the text of every echo call the server finished.
func echoedTexts(t *testing.T, rec string) []string {
	t.Helper()
	var texts []string
	for _, r := range readRecords(t, rec) {
		if r.Method != "tools/call" {
			continue
		}
		var params struct {
			Name      string `json:"name"`
			Arguments struct {
				Text string `json:"text"`
			} `json:"arguments"`
		}
		if json.Unmarshal(r.Params, &params) == nil && params.Name == "echo" {
			texts = append(texts, params.Arguments.Text)
		}
	}
	return texts
}
