package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/mcp/mcptest"
)

// A model turn that asks for 3,000 tool calls ends its run at andon.yaml's
// max_calls_per_turn, and the server never sees a call: the issue's
// reproduction, through serve, the CLI and a real stdio server.
func TestServeEndsATurnOverItsCallBudget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := filepath.Join(dir, "records.jsonl")
	p := startServe(t, dir, testConfig(rec, false)+"runs:\n  max_calls_per_turn: 50\n")
	var script strings.Builder
	script.WriteString("steps:\n  - tool_calls:\n")
	for range 3000 {
		script.WriteString("      - name: mcp_e2e_echo\n        arguments: {text: x}\n")
	}
	script.WriteString("  - text: done\n")
	path := writeScript(t, dir, "storm.yaml", script.String())

	r := p.andon("run", "--script", path)
	r.check(t, exitOK)
	id := strings.TrimSpace(r.stdout)
	d := p.waitRun(id, hasStatus(agent.StatusFailed))
	if d.Run.Reason != string(agent.ReasonMaxCallsPerTurn) || !strings.Contains(d.Run.Error, "max_calls_per_turn (50)") {
		t.Errorf("run ended %s (%q), want max_calls_per_turn naming the limit", d.Run.Reason, d.Run.Error)
	}
	for _, rc := range readRecords(t, rec) {
		if rc.Kind == mcptest.Received && rc.Method == "tools/call" {
			t.Fatalf("the server received a tools/call: %+v", rc)
		}
	}
}

// A flag of serve or worker wins over andon.yaml's runs section, limit by
// limit; zero leaves the file's.
func TestRunLimitFlagsWinOverTheFile(t *testing.T) {
	file := runLimits{MaxRounds: 7, MaxCallsPerTurn: 9}
	got := file.over(runLimits{MaxCallsPerTurn: 3, MaxCallsPerRun: 11})
	if want := (runLimits{MaxRounds: 7, MaxCallsPerTurn: 3, MaxCallsPerRun: 11}); got != want {
		t.Errorf("over = %+v, want %+v", got, want)
	}
}

// andon.yaml's runs section is checked as strictly as the servers: an
// unknown key or a negative limit is an error naming it.
func TestRunLimitsInTheConfigFile(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ body, want string }{
		{"servers: []\nruns:\n  max_calls_per_run: 12\n", ""},
		{"servers: []\nruns:\n  max_calls_per_trun: 12\n", "max_calls_per_trun"},
		{"servers: []\nruns:\n  max_calls_per_turn: -1\n", "max_calls_per_turn -1"},
	} {
		path := filepath.Join(dir, "andon.yaml")
		writeScript(t, dir, "andon.yaml", tt.body)
		cfg, err := loadConfig(path)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%q: %v", tt.body, err)
		case tt.want == "" && cfg.Runs.MaxCallsPerRun != 12:
			t.Errorf("%q: runs = %+v", tt.body, cfg.Runs)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%q: err = %v, want one naming %q", tt.body, err, tt.want)
		}
	}
}
