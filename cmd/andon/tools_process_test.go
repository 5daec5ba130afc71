package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/mcp/mcptest"
)

// TestToolSettingsAcrossProcesses: an operator changes tools through the
// API of `andon serve --workers 0` (A); `andon worker` (B), on the same
// database, already running runs, applies the change without a restart: a
// disabled tool is no longer called, and a reclassified tool is fenced as
// its new class.
func TestToolSettingsAcrossProcesses(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			db := filepath.Join(dir, "andon.db")
			if backend == "postgres" {
				db, _ = testPostgres(t)
			}
			rec := filepath.Join(dir, "records.jsonl")
			config := filepath.Join(dir, "andon.yaml")
			if err := os.WriteFile(config, []byte(testConfig(rec, false)), 0o644); err != nil {
				t.Fatal(err)
			}
			env := processEnv(t)
			common := []string{"--db", db, "--config", config}
			b := startAndon(t, dir, env, append([]string{"worker"}, common...)...)
			b.waitOutput("its banner", contains("andon: worker executing"))
			a, addr := startServeAPI(t, dir, env, append(common, "--workers", "0")...)
			p := &serveProc{t: t, dir: dir, addr: addr}
			c := p.client()
			ctx := context.Background()
			echo := writeScript(t, dir, "echo.yaml", echoScriptYAML)
			slow := writeScript(t, dir, "slow.yaml", slowScriptYAML)

			// B runs echo before any change: its catalogue has read the
			// settings.
			if d := runEcho(p, echo); d.outcome != string(agent.OutcomeOK) {
				t.Fatalf("echo before any change: %s %q", d.outcome, d.text)
			}

			if _, err := c.ImportServer(ctx, "e2e"); err != nil {
				t.Fatalf("importing e2e through A: %v", err)
			}
			no, effect := false, string(agent.EffectIdempotentWrite)
			if _, err := c.PatchTool(ctx, "mcp_e2e_echo", &api.ToolPatch{Enabled: &no}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.PatchTool(ctx, "mcp_e2e_slow", &api.ToolPatch{Effect: &effect}); err != nil {
				t.Fatal(err)
			}

			// B applies the change within its settings' bound (a second by
			// default), without a restart.
			deadline := time.Now().Add(patience)
			for {
				d := runEcho(p, echo)
				if d.outcome == string(agent.OutcomeFailed) {
					if !strings.Contains(d.text, "disabled by an operator") {
						t.Errorf("the disabled echo's step says %q", d.text)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the worker never applied the disabling of echo made through serve")
				}
				time.Sleep(100 * time.Millisecond)
			}
			echoes := len(toolCallsOf(readRecords(t, rec), "echo"))
			if echoes == 0 {
				t.Fatal("no echo call recorded, not even the first run's")
			}
			if d := runEcho(p, echo); d.outcome != string(agent.OutcomeFailed) {
				t.Errorf("a later echo run: %s", d.outcome)
			}
			if after := len(toolCallsOf(readRecords(t, rec), "echo")); after != echoes {
				t.Errorf("the server received %d calls of the disabled echo", after-echoes)
			}

			// slow is fenced as the operator's idempotent write.
			r := p.andon("run", "--script", slow)
			r.check(t, exitOK)
			id := strings.TrimSpace(r.stdout)
			waitForRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted && r.Tool == "slow" })
			d, err := c.GetRun(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if d.Run.PendingEffect != effect {
				t.Errorf("slow's fence reads %q on B, want the operator's %s", d.Run.PendingEffect, effect)
			}
			p.andon("cancel", id).check(t, exitOK)
			p.waitRun(id, hasStatus(agent.StatusCancelled))

			a.stop()
			b.stop()
		})
	}
}

type toolStep struct{ outcome, text string }

// runEcho runs the echo script to its end and returns its tool step.
func runEcho(p *serveProc, script string) toolStep {
	p.t.Helper()
	r := p.andon("run", "--script", script)
	r.check(p.t, exitOK)
	id := strings.TrimSpace(r.stdout)
	d := p.waitRun(id, hasStatus(agent.StatusCompleted))
	for _, st := range d.Steps {
		if st.Kind == string(agent.StepTool) {
			return toolStep{st.Outcome, st.Text}
		}
	}
	p.t.Fatalf("run %s has no tool step: %+v", id, d.Steps)
	return toolStep{}
}

// toolCallsOf returns the tools/call requests for the tool called name.
func toolCallsOf(recs []mcptest.Record, name string) []mcptest.Record {
	var out []mcptest.Record
	for _, r := range recs {
		if r.Kind == mcptest.Received && r.Method == "tools/call" && strings.Contains(string(r.Params), `"name":"`+name+`"`) {
			out = append(out, r)
		}
	}
	return out
}
