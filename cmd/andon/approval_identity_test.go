package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/mcp/mcptest"
)

// The reproduction: a run waits for approval on gated's tool; serve
// stops; gated's command is changed in andon.yaml; serve starts again and
// the approval is given. The call goes to neither server: the run records
// that the approval no longer applies and waits again, and only the
// approval of the call on the new server makes it, there, once.
func TestApprovalDoesNotFollowARedefinedServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	oldRec, newRec := filepath.Join(dir, "old.jsonl"), filepath.Join(dir, "new.jsonl")
	p := startServe(t, dir, testConfig(oldRec, true))
	r := p.andon("run", "--script", writeScript(t, dir, "echo.yaml", echoScriptYAML))
	r.check(t, exitOK)
	id := strings.TrimSpace(r.stdout)
	p.waitRun(id, hasStatus(agent.StatusWaitingForApproval))
	p.stop()

	// Same name, another command: the server is another program now.
	if err := os.WriteFile(filepath.Join(dir, "andon.yaml"), []byte(testConfig(newRec, true)), 0o600); err != nil {
		t.Fatal(err)
	}
	p = startServe(t, dir, "")
	p.andon("approve", id).check(t, exitOK)
	p.waitRun(id, func(d *api.RunDetail) bool {
		stale := false
		for _, s := range d.Steps {
			stale = stale || s.Kind == string(agent.StepApproval) && s.Outcome == string(agent.OutcomeStale)
		}
		return d.Run.Status == string(agent.StatusWaitingForApproval) && stale
	})
	for _, rec := range []string{oldRec, newRec} {
		if n := toolCallsIn(t, rec); n != 0 {
			t.Fatalf("%s received %d tools/call on the approval given for the old server", filepath.Base(rec), n)
		}
	}

	p.andon("approve", id).check(t, exitOK)
	p.waitRun(id, hasStatus(agent.StatusCompleted))
	if n := toolCallsIn(t, newRec); n != 1 {
		t.Errorf("the new server received %d tools/call after its approval, want 1", n)
	}
	if n := toolCallsIn(t, oldRec); n != 0 {
		t.Errorf("the old server received %d tools/call", n)
	}
	p.stop()
}

// toolCallsIn counts the tools/call requests an mcptest record holds (none
// for a server that never started).
func toolCallsIn(t *testing.T, rec string) int {
	t.Helper()
	recs, err := mcptest.ReadRecords(rec)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if r.Kind == mcptest.Received && r.Method == "tools/call" {
			n++
		}
	}
	return n
}
