package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
	"github.com/andonhq/andon/sqlstore"
)

// taskPatience bounds the waits of the crash tests, whose runs pass
// through a dead worker's lease, a reaper and a second worker on a loaded
// machine: generous, and only there so that a broken test ends.
const taskPatience = 90 * time.Second

// taskDeployment is a deployment whose MCP server runs tasks: a worker
// that will be killed, an API process that executes nothing, and the
// MCP server — over HTTP, in a process of its own that outlives the
// worker, or over stdio, a child of the worker that dies with it.
type taskDeployment struct {
	t      *testing.T
	dir    string
	env    []string
	db     string
	rec    string
	common []string
	doomed *andonProc
	api    *serveProc
}

func newTaskDeployment(t *testing.T, postgres, stdio bool, revision string) *taskDeployment {
	t.Helper()
	d := &taskDeployment{t: t, dir: t.TempDir(), env: processEnv(t)}
	d.db = filepath.Join(d.dir, "andon.db")
	if postgres {
		d.db, _ = testPostgres(t)
	}
	d.rec = filepath.Join(d.dir, "records.jsonl")
	var server string
	if stdio {
		server = fmt.Sprintf("    command: [\"@andon\", \"mcptest\", \"serve\", \"-tasks\", \"-record\", %q]\n    env: {GORACE: \"atexit_sleep_ms=0\"}\n", d.rec)
	} else {
		mcpProc := startAndon(t, d.dir, d.env, "mcptest", "serve", "-tasks", "-http", "127.0.0.1:0", "-record", d.rec)
		mcpProc.waitOutput("its endpoint", contains("http://127.0.0.1:"))
		server = "    url: " + firstLineWith(mcpProc.out.String(), "http://") + "\n"
	}
	if revision != "" {
		server += "    protocol: " + revision + "\n"
	}
	config := "servers:\n  - name: e2e\n" + server + "    requires_approval: false\n"
	configPath := filepath.Join(d.dir, "andon.yaml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	// Short leases, so the dead worker's lapses soon; a frequent reaper.
	d.common = []string{"--db", d.db, "--config", configPath, "--lease", "2s", "--reap-interval", "200ms"}
	d.doomed = startAndon(t, d.dir, d.env, append([]string{"worker"}, d.common...)...)
	d.doomed.waitOutput("its banner", contains("andon: worker executing"))
	a, addr := startServeAPI(t, d.dir, d.env, append(d.common, "--workers", "0")...)
	t.Cleanup(a.stop)
	d.api = &serveProc{t: t, dir: d.dir, addr: addr}
	return d
}

func firstLineWith(out, prefix string) string {
	for line := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(line, prefix) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// startMidTask submits a run whose one call is the task tool with args,
// waits until the call's task is persisted, and kills the worker with
// SIGKILL. It returns the run and its task.
func (d *taskDeployment) startMidTask(tool, args string) (string, api.Task) {
	d.t.Helper()
	return d.stopMidTask(tool, args, syscall.SIGKILL)
}

// stopMidTask is startMidTask with the worker stopped by sig, and waited
// for.
func (d *taskDeployment) stopMidTask(tool, args string, sig os.Signal) (string, api.Task) {
	d.t.Helper()
	script := writeScript(d.t, d.dir, "task.yaml", fmt.Sprintf("steps:\n  - tool_calls:\n      - name: mcp_e2e_%s\n        arguments: %s\n  - text: done\n", tool, args))
	r := d.api.andon("run", "--script", script)
	r.check(d.t, exitOK)
	id := strings.TrimSpace(r.stdout)
	det := d.wait(id, "its call's task persisted", func(det *api.RunDetail) bool { return len(det.Tasks) == 1 })
	if err := d.doomed.cmd.Process.Signal(sig); err != nil {
		d.t.Fatal(err)
	}
	<-d.doomed.exited
	return id, det.Tasks[0]
}

func (d *taskDeployment) wait(id, what string, done func(*api.RunDetail) bool) *api.RunDetail {
	d.t.Helper()
	c := d.api.client()
	deadline := time.Now().Add(taskPatience)
	for {
		det, err := c.GetRun(context.Background(), id)
		if err == nil && done(det) {
			return det
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("run %s never reached %s: %+v, %v", id, what, det, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitLeaseLapsed waits until the store says the dead worker's lease on
// run id has lapsed: no live process holds the call any more.
func (d *taskDeployment) waitLeaseLapsed(id string) {
	d.t.Helper()
	st, err := sqlstore.Open(context.Background(), d.db)
	if err != nil {
		d.t.Fatal(err)
	}
	defer st.Close()
	deadline := time.Now().Add(taskPatience)
	for {
		run, err := st.RunGet(context.Background(), id)
		if err != nil {
			d.t.Fatal(err)
		}
		if run.Status != agent.StatusRunning || run.LeaseExpires.Before(time.Now()) {
			return
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("the dead worker's lease on %s never lapsed: %+v", id, run)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (d *taskDeployment) records() []mcptest.Record {
	recs, _ := mcptest.ReadRecords(d.rec)
	return recs
}

func (d *taskDeployment) count(match func(mcptest.Record) bool) int {
	n := 0
	for _, r := range d.records() {
		if match(r) {
			n++
		}
	}
	return n
}

func toolsCalls(r mcptest.Record) bool { return r.Kind == mcptest.Received && r.Method == "tools/call" }

// taskBackends are the store and task generation pairs the crash and
// shutdown tests run on: each backend once, each generation once.
func taskBackends() []taskBackend {
	return []taskBackend{
		{"sqlite/" + mcp.Version20251125, mcp.Version20251125, false},
		{"postgres/" + mcp.Version20260728, mcp.Version20260728, true},
	}
}

type taskBackend struct {
	name, revision string
	postgres       bool
}

// A worker killed with SIGKILL while its call's task runs on an MCP server
// that outlives it; then an operator cancels the run from another process.
// That process sends tasks/cancel with the persisted id — the server
// records it for that task — reports the server's answer, and audits it.
func TestTaskCancelledAfterItsWorkerDied(t *testing.T) {
	t.Parallel()
	for _, tc := range taskBackends() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := newTaskDeployment(t, tc.postgres, false, tc.revision)
			id, task := d.startMidTask("task_wait", "{ms: 120000}")
			if task.Revision != tc.revision || task.Server != "e2e" || task.TaskID == "" {
				t.Fatalf("persisted task %+v; want one of e2e under %s", task, tc.revision)
			}
			d.waitLeaseLapsed(id)

			r := d.api.andon("cancel", id)
			r.check(t, exitOK)
			if want := "task " + task.TaskID + " of mcp_e2e_task_wait on server e2e (step 1, call 1): tasks/cancel acknowledged"; !strings.Contains(r.stderr, want) {
				t.Errorf("andon cancel said:\n%s\nwant %q", r.stderr, want)
			}
			if n := d.count(func(r mcptest.Record) bool { return r.Kind == mcptest.TaskCancelRequested && r.Task == task.TaskID }); n != 1 {
				t.Errorf("the server recorded %d tasks/cancel for %s; want 1:\n%s", n, task.TaskID, dump(d.records()))
			}
			det := d.wait(id, "the cancel on its task", func(det *api.RunDetail) bool {
				return len(det.Tasks) == 1 && det.Tasks[0].CancelOutcome == "acknowledged"
			})
			if det.Run.Status != "cancelled" || det.Run.PendingEffect != string(agent.EffectNonIdempotentWrite) {
				t.Errorf("run %s, fence %q; want cancelled with the fence stamped", det.Run.Status, det.Run.PendingEffect)
			}
			show := d.api.andon("show", id)
			show.check(t, exitOK)
			for _, want := range []string{"task " + task.TaskID + " on server e2e (" + tc.revision + "), ", "; tasks/cancel acknowledged",
				": server e2e, mcp_e2e_task_wait step=1 call=1 task=" + task.TaskID + " (acknowledged)"} {
				if !strings.Contains(show.stdout, want) {
					t.Errorf("andon show printed:\n%s\nwant %q", show.stdout, want)
				}
			}
			var rows []api.AuditRow
			for _, a := range det.Audit {
				if a.Action == "task_cancel" {
					rows = append(rows, a)
				}
			}
			if len(rows) != 1 || rows[0].Reason != "acknowledged" || rows[0].Host != "e2e" || !strings.Contains(rows[0].Path, "task="+task.TaskID) {
				t.Errorf("task_cancel audit rows = %+v; want one, acknowledged, naming e2e and the task", rows)
			}
		})
	}
}

// A worker killed with SIGKILL while its call's task runs on an MCP server
// that outlives it; another worker takes the run over. It asks the server
// instead of calling the tool again — the server saw one tools/call — and
// records the task's result as the call's step, which settles the fence.
func TestTaskTakenOverAfterItsWorkerDied(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, revision string
		postgres       bool
	}{
		{"sqlite/" + mcp.Version20260728, mcp.Version20260728, false},
		{"postgres/" + mcp.Version20251125, mcp.Version20251125, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := newTaskDeployment(t, tc.postgres, false, tc.revision)
			id, task := d.startMidTask("task_wait", "{ms: 4000}")

			rescuer := startAndon(t, d.dir, d.env, append([]string{"worker"}, d.common...)...)
			defer rescuer.stop()
			det := d.wait(id, "its end", func(det *api.RunDetail) bool { return det.Run.FinishedAt != nil })
			if det.Run.Status != "completed" || det.Run.PendingEffect != "" || det.Run.Attempts != 2 {
				t.Fatalf("run %s (%s: %s), fence %q, attempts %d; want completed by the second worker, the fence settled",
					det.Run.Status, det.Run.Reason, det.Run.Error, det.Run.PendingEffect, det.Run.Attempts)
			}
			if n := d.count(toolsCalls); n != 1 {
				t.Errorf("the server saw %d tools/call; want 1 (the second worker asked after the task)", n)
			}
			if n := d.count(func(r mcptest.Record) bool { return r.Kind == mcptest.Received && r.Method == "tasks/get" }); n == 0 {
				t.Errorf("the server saw no tasks/get")
			}
			var call *api.Step
			for i := range det.Steps {
				if det.Steps[i].Kind == "tool" {
					call = &det.Steps[i]
				}
			}
			if call == nil || call.Outcome != "ok" {
				t.Errorf("the call's step = %+v; want ok, from the task's result", call)
			}
			if len(det.Tasks) != 1 || !det.Tasks[0].Settled || det.Tasks[0].Status != "completed" || det.Tasks[0].TaskID != task.TaskID {
				t.Errorf("tasks = %+v; want %s settled, completed", det.Tasks, task.TaskID)
			}
		})
	}
}

// A stdio server dies with its worker, and its tasks with it: the worker
// that takes the run over asks a new server process, which cannot say what
// became of the task. The fence stays stamped and the run is
// dead-lettered, as a run found mid-write is; the tool is not called
// again.
func TestTaskOfAStdioServerDiesWithItsWorker(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		postgres bool
	}{{"sqlite", false}, {"postgres", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := newTaskDeployment(t, tc.postgres, true, "")
			id, _ := d.startMidTask("task_wait", "{ms: 120000}")

			rescuer := startAndon(t, d.dir, d.env, append([]string{"worker"}, d.common...)...)
			defer rescuer.stop()
			det := d.wait(id, "its end", func(det *api.RunDetail) bool { return det.Run.FinishedAt != nil })
			if det.Run.Status != "failed" || det.Run.Reason != "not_retryable" || det.Run.PendingEffect != string(agent.EffectNonIdempotentWrite) {
				t.Errorf("run %s (%s), fence %q; want dead-lettered with the fence stamped", det.Run.Status, det.Run.Reason, det.Run.PendingEffect)
			}
			if n := d.count(toolsCalls); n != 1 {
				t.Errorf("the servers saw %d tools/call; want 1", n)
			}
			if len(det.Tasks) != 1 || det.Tasks[0].Status != "unknown" {
				t.Errorf("tasks = %+v; want the task unknown", det.Tasks)
			}
		})
	}
}
