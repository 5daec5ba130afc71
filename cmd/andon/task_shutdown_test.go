package main

import (
	"syscall"
	"testing"

	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/mcp/mcptest"
)

// A worker stopped gracefully (SIGTERM) while its call's task runs on an
// MCP server that outlives it: a shutdown is not a cancel, so the worker
// sends no tasks/cancel and leaves the task, its handle and the fence for
// the next worker, which follows the task and collects its result — the
// server saw one tools/call and no tasks/cancel.
func TestTaskFollowedAfterItsWorkerShutDown(t *testing.T) {
	t.Parallel()
	for _, tc := range taskBackends() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := newTaskDeployment(t, tc.postgres, false, tc.revision)
			// Long enough to outlast the shutdown on a loaded machine.
			id, task := d.stopMidTask("task_wait", "{ms: 8000}", syscall.SIGTERM)
			cancels := func(r mcptest.Record) bool { return r.Kind == mcptest.TaskCancelRequested && r.Task == task.TaskID }
			if n := d.count(cancels); n != 0 {
				t.Fatalf("the server recorded %d tasks/cancel for %s after a graceful shutdown; want 0", n, task.TaskID)
			}
			det := d.wait(id, "the shutdown's state", func(*api.RunDetail) bool { return true })
			if det.Run.FinishedAt != nil || det.Run.PendingEffect == "" || len(det.Tasks) != 1 || det.Tasks[0].Settled ||
				det.Tasks[0].CancelOutcome != "" {
				t.Fatalf("after the shutdown: run %+v, tasks %+v; want unfinished, the fence stamped, the task open, no cancel", det.Run, det.Tasks)
			}

			next := startAndon(t, d.dir, d.env, append([]string{"worker"}, d.common...)...)
			defer next.stop()
			det = d.wait(id, "its end", func(det *api.RunDetail) bool { return det.Run.FinishedAt != nil })
			if det.Run.Status != "completed" || det.Run.PendingEffect != "" || det.Run.Attempts != 2 {
				t.Fatalf("run %s (%s: %s), fence %q, attempts %d; want completed by the next worker, the fence settled",
					det.Run.Status, det.Run.Reason, det.Run.Error, det.Run.PendingEffect, det.Run.Attempts)
			}
			if n := d.count(toolsCalls); n != 1 {
				t.Errorf("the server saw %d tools/call; want 1 (the next worker followed the task)", n)
			}
			if n := d.count(cancels); n != 0 {
				t.Errorf("the server recorded %d tasks/cancel for %s; want 0", n, task.TaskID)
			}
			if len(det.Tasks) != 1 || !det.Tasks[0].Settled || det.Tasks[0].Status != "completed" {
				t.Errorf("tasks = %+v; want %s settled, completed", det.Tasks, task.TaskID)
			}
		})
	}
}
