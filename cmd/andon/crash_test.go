package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/mcp/mcptest"
)

// A worker killed with SIGKILL in the middle of a tool call: if the call
// was a non-idempotent write, the run is dead-lettered and never executed
// again (the MCP server saw the call exactly once); if it was read-only,
// another worker takes the run back once the dead worker's lease lapses,
// and finishes it.
func TestWorkerKilledMidCall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		effect   string // the slow tool's effect in andon.yaml; "" is the default
		postgres bool
	}{
		{name: "write/sqlite"},
		{name: "write/postgres", postgres: true},
		{name: "read/sqlite", effect: "read_only"},
		{name: "read/postgres", effect: "read_only", postgres: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			db := filepath.Join(dir, "andon.db")
			if tc.postgres {
				db, _ = testPostgres(t)
			}
			rec := filepath.Join(dir, "records.jsonl")
			config := testConfig(rec, false)
			if tc.effect != "" {
				config += "    effects: {slow: " + tc.effect + "}\n"
			}
			configPath := filepath.Join(dir, "andon.yaml")
			if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
				t.Fatal(err)
			}
			env := processEnv(t)
			// Short leases, so the dead worker's lapses soon; a frequent reaper.
			common := []string{"--db", db, "--config", configPath, "--lease", "2s", "--reap-interval", "200ms"}

			doomed := startAndon(t, dir, env, append([]string{"worker"}, common...)...)
			doomed.waitOutput("its banner", contains("andon: worker executing"))
			a, addr := startServeAPI(t, dir, env, append(common, "--workers", "0")...)
			defer a.stop()
			p := &serveProc{t: t, dir: dir, addr: addr}

			// 3 s: long enough to kill the worker during it, short enough
			// that the retried read finishes quickly.
			script := writeScript(t, dir, "slow.yaml", `steps:
  - tool_calls:
      - name: mcp_e2e_slow
        arguments: {ms: 3000}
  - text: done
`)
			r := p.andon("run", "--script", script)
			r.check(t, exitOK)
			id := strings.TrimSpace(r.stdout)
			waitForRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted && r.Tool == "slow" })
			if err := doomed.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-doomed.exited

			rescuer := startAndon(t, dir, env, append([]string{"worker"}, common...)...)
			defer rescuer.stop()
			d := p.waitRun(id, func(d *api.RunDetail) bool { return d.Run.FinishedAt != nil })
			calls := 0
			recs, _ := mcptest.ReadRecords(rec)
			for _, r := range recs {
				if r.Kind == mcptest.Received && r.Method == "tools/call" {
					calls++
				}
			}
			if tc.effect == "" {
				if d.Run.Status != "failed" || d.Run.Reason != "not_retryable" {
					t.Errorf("run %s (%s), want failed (not_retryable): dead-lettered", d.Run.Status, d.Run.Reason)
				}
				if calls != 1 {
					t.Errorf("the MCP server saw the write %d times, want exactly once", calls)
				}
				return
			}
			if d.Run.Status != "completed" {
				t.Errorf("run %s (%s: %s), want completed by the second worker", d.Run.Status, d.Run.Reason, d.Run.Error)
			}
			if calls != 2 {
				t.Errorf("the MCP server saw the read %d times, want twice (once per worker)", calls)
			}
			if d.Run.Attempts != 2 {
				t.Errorf("attempts = %d, want 2", d.Run.Attempts)
			}
		})
	}
}
