package main

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/mcp/mcptest"
	"github.com/andonhq/andon/sqlstore"
)

// andon worker refuses --workers 0 (that is serve's API-only mode) and a
// missing config (serve writes a demo; a worker must run what it is told).
func TestWorkerUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := runAndonIn(t, dir, "worker", "--workers", "0")
	r.check(t, exitUsage)
	if !strings.Contains(r.stderr, "--workers 0") {
		t.Errorf("stderr %q", r.stderr)
	}
	r = runAndonIn(t, dir, "worker", "--config", filepath.Join(dir, "nope.yaml"))
	r.check(t, exitFailure)
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refused worker left files behind: %v", entries)
	}
}

// TestCancelAcrossProcesses is the multi-process test of scaling out: an
// `andon worker` (B) executes a run that calls mcptest's slow tool over
// stdio; `andon serve --workers 0` (A: the API, executing nothing) shares
// its database; `andon cancel` through A's API cancels the run; the
// cancellation crosses to B and onto the MCP wire; the run ends cancelled
// with its write fence stamped.
//
// B's backstop poll is set to an hour, so only a notification can have
// carried the cancel in time (the lease renewal, which would also stop the
// call, comes after 20 s, later than patience): andon's NOTIFY or River
// cancelling the run's job on PostgreSQL; River alone with NOTIFY turned
// off, and on SQLite (riversqlite's notification table). The runs reach
// B as River jobs.
//
// On postgres/notify, a stray NOTIFY comes first — one the row does not
// back, as anyone who may connect can send: B reads the row, finds the run
// running, and leaves the call alone; the real cancel then still reaches
// the wire.
func TestCancelAcrossProcesses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		postgres bool
		flags    []string // for both processes
		bFlags   []string // for B
	}{
		{name: "postgres/notify", postgres: true, bFlags: []string{"--watch-interval", "1h", "-v"}},
		{name: "postgres/river", postgres: true, flags: []string{"--notify=false"}, bFlags: []string{"--watch-interval", "1h"}},
		{name: "sqlite/river", bFlags: []string{"--watch-interval", "1h"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			db, password := filepath.Join(dir, "andon.db"), ""
			if tc.postgres {
				db, password = testPostgres(t)
			}
			rec := filepath.Join(dir, "records.jsonl")
			config := filepath.Join(dir, "andon.yaml")
			if err := os.WriteFile(config, []byte(testConfig(rec, false)), 0o644); err != nil {
				t.Fatal(err)
			}
			env := processEnv(t)
			common := append([]string{"--db", db, "--config", config}, tc.flags...)

			b := startAndon(t, dir, env, append(append([]string{"worker"}, common...), tc.bFlags...)...)
			b.waitOutput("its banner", contains(fmt.Sprintf("andon: worker executing up to %d runs at once", agent.DefaultMaxConcurrentRuns)))
			notify := tc.postgres && len(tc.flags) == 0
			if notify {
				b.waitOutput("that it listens", contains("listening for cancels from other processes"))
			}
			a, addr := startServeAPI(t, dir, env, append(common, "--workers", "0")...)
			p := &serveProc{t: t, dir: dir, addr: addr} // for its API helpers

			slow := writeScript(t, dir, "slow.yaml", slowScriptYAML)
			r := p.andon("run", "--script", slow)
			r.check(t, exitOK)
			id := strings.TrimSpace(r.stdout)
			waitForRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted && r.Tool == "slow" })
			if notify {
				checkStrayNotifyChangesNothing(t, p, b, db, rec, id)
			}

			r = p.andon("cancel", id)
			r.check(t, exitOK)
			// The MCP server, a child of B, was told: notifications/cancelled
			// naming the tools/call, and the tool stopped.
			checkSlowCallCancelled(t, rec)

			d := p.waitRun(id, func(d *api.RunDetail) bool { return len(d.Steps) >= 2 })
			if d.Run.Status != "cancelled" || d.Run.Reason != "cancelled" {
				t.Errorf("run status %s (%s), want cancelled", d.Run.Status, d.Run.Reason)
			}
			if d.Run.PendingEffect != string(agent.EffectNonIdempotentWrite) {
				t.Errorf("pending_effect %q, want %s: the fence must stay stamped", d.Run.PendingEffect, agent.EffectNonIdempotentWrite)
			}
			if last := d.Steps[len(d.Steps)-1]; last.Kind != "tool" || last.Tool != "mcp_e2e_slow" || last.Outcome != "cancelled" {
				t.Errorf("last step %+v, want the slow tool, cancelled", last)
			}
			// B executed the run and stopped it because it was cancelled
			// (not because its lease was lost); A executed nothing.
			ended := func(line string) bool {
				return strings.Contains(line, `msg="agent: segment ended"`) && strings.Contains(line, "run="+id)
			}
			b.waitOutput("that the run's segment ended", ended)
			for line := range strings.SplitSeq(b.out.String(), "\n") {
				if ended(line) && !strings.Contains(line, `why="run cancelled"`) {
					t.Errorf("B ended the run for another reason: %s", line)
				}
			}
			if strings.Contains(a.out.String(), "segment ended") {
				t.Errorf("andon serve --workers 0 executed a run:\n%s", a.out.String())
			}

			a.stop()
			b.stop()
			for _, out := range []string{a.out.String(), b.out.String()} {
				if password != "" && strings.Contains(out, password) {
					t.Errorf("a process printed the database password:\n%s", out)
				}
			}
			if tc.postgres && !strings.Contains(b.out.String(), "(database "+redactDSN(db)+",") {
				t.Errorf("the worker's banner does not name the database without its password:\n%s", b.out.String())
			}
		})
	}
}

// When the runtime cannot work the queue — here the database lost the
// column that links runs to their River jobs — serve and worker say so and
// exit 1, rather than serve an API whose runs never execute, or idle.
func TestServeAndWorkerStopWhenRunsCannotExecute(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "andon.db")
	runAndonIn(t, dir, "migrate", "--db", db).check(t, exitOK)
	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`ALTER TABLE runs RENAME COLUMN job_id TO job_id_gone`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	config := filepath.Join(dir, "andon.yaml")
	if err := os.WriteFile(config, []byte(testConfig(filepath.Join(dir, "rec.jsonl"), false)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"serve", "--db", db, "--config", config, "--addr", freeLoopback(t)},
		{"worker", "--db", db, "--config", config},
	} {
		r := runAndonIn(t, dir, args...)
		if r.code != exitFailure || !strings.Contains(r.stderr, "executing runs:") || !strings.Contains(r.stderr, "job_id") {
			t.Errorf("andon %s: exit %d, stderr:\n%s\nwant exit %d saying it cannot execute runs", args[0], r.code, r.stderr, exitFailure)
		}
	}
}

// checkStrayNotifyChangesNothing announces a cancel of run id that the row
// does not back, waits until worker b has read the row on that hint (its
// debug log says so), and checks that nothing was cancelled: no
// notifications/cancelled, the slow call still in flight, the run running.
func checkStrayNotifyChangesNothing(t *testing.T, p *serveProc, b *andonProc, db, rec, id string) {
	t.Helper()
	pg, err := sqlstore.OpenPostgres(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	n, ok := pg.Notifier()
	if !ok {
		t.Fatal("a PostgreSQL store has no Notifier")
	}
	if err := n.NotifyCancelled(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	b.waitOutput("that it read the row on the stray NOTIFY", func(line string) bool {
		return strings.Contains(line, "a cancel hint the run row does not back") && strings.Contains(line, "run="+id)
	})
	recs := readRecords(t, rec)
	if r := find(recs, func(r mcptest.Record) bool {
		return r.Kind == mcptest.ToolCancelled || r.Kind == mcptest.ToolFinished || (r.Kind == mcptest.Received && r.Method == "notifications/cancelled")
	}); r != nil {
		t.Errorf("after a stray NOTIFY the server saw %s %s; want the call untouched; records:\n%s", r.Kind, r.Method, dump(recs))
	}
	d := p.waitRun(id, func(*api.RunDetail) bool { return true })
	if d.Run.Status != "running" || len(d.Steps) != 1 {
		t.Errorf("after a stray NOTIFY: run %s with %d steps; want running, the call in flight", d.Run.Status, len(d.Steps))
	}
}
