package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
	"github.com/andonhq/andon/sqlstore"
)

// taskPatience bounds the waits of the tests below, which follow real
// tasks of several seconds on a loaded machine.
const taskPatience = 60 * time.Second

// taskStack is a store, an mcptest server with task tools, and what
// reaches it: a catalogue per worker, each on its own connections.
type taskStack struct {
	st       *sqlstore.Store
	srv      *mcptest.Server
	log      *audit.Log
	revision string
}

func newTaskStack(t *testing.T, revision string) *taskStack {
	t.Helper()
	st, err := sqlstore.Open(context.Background(), filepath.Join(t.TempDir(), "andon.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := mcptest.NewServer(&mcptest.Options{Tasks: true})
	t.Cleanup(srv.Close)
	return &taskStack{st: st, srv: srv, log: audit.New(st, []byte("0123456789abcdef0123456789abcdef")), revision: revision}
}

func (s *taskStack) catalogue(t *testing.T) *catalogue.Catalogue {
	t.Helper()
	no := false
	cat, err := catalogue.New(&catalogue.Config{Servers: []catalogue.Server{{Name: "test", Command: []string{"unused"},
		RequiresApproval: &no, Protocol: s.revision}}}, &catalogue.Options{
		Dial: func(context.Context, catalogue.Server) (mcp.Transport, error) { return s.srv.Transport(), nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	return cat
}

// worker is a runtime on the stack, with its own catalogue, run until
// stop — a graceful shutdown.
func (s *taskStack) worker(t *testing.T, name string, adjust func(*agent.Config)) (*agent.Runtime, func()) {
	t.Helper()
	rt := newRuntime(t, s.st, s.catalogue(t), slog.New(slog.DiscardHandler), true, func(c *agent.Config) {
		c.Audit, c.WorkerID = s.log, name
		if adjust != nil {
			adjust(c)
		}
	})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		rt.Run(ctx)
	}()
	stopped := false
	shutdown := func() {
		if !stopped {
			stopped = true
			stop()
			<-done
		}
	}
	t.Cleanup(shutdown)
	return rt, shutdown
}

func (s *taskStack) api(t *testing.T, rt *agent.Runtime) *api.Client {
	t.Helper()
	h, err := api.NewHandler(api.Config{Runtime: rt, Store: s.st})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return &api.Client{BaseURL: hs.URL, HTTP: hs.Client()}
}

// cancels is how many tasks/cancel the server received for task id.
func (s *taskStack) cancels(id string) int {
	n := 0
	for _, r := range s.srv.Records() {
		if r.Kind == mcptest.TaskCancelRequested && r.Task == id {
			n++
		}
	}
	return n
}

// taskCancelRows waits for the run's task_cancel audit rows and returns
// them.
func (s *taskStack) taskCancelRows(t *testing.T, runID string) []audit.Row {
	t.Helper()
	deadline := time.Now().Add(taskPatience)
	for {
		rows, err := s.log.List(context.Background(), audit.Query{RunID: runID, Action: audit.ActionTaskCancel})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) > 0 || time.Now().After(deadline) {
			return rows
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func waitTask(t *testing.T, c *api.Client, id, what string, done func(*api.RunDetail) bool) *api.RunDetail {
	t.Helper()
	deadline := time.Now().Add(taskPatience)
	for {
		d, err := c.GetRun(context.Background(), id)
		if err == nil && done(d) {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: never %s: %+v, %v", id, what, d, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func taskScript(ms int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"steps":[{"tool_calls":[{"name":"mcp_test_task_wait","arguments":{"ms":%d}}]},{"text":"done"}]}`, ms))
}

// The worker holding a task call sends tasks/cancel when its run is
// cancelled, and records what the server said: the task reads cancelled
// with the cancel acknowledged, one task_cancel audit row says so, and
// nothing is left for the reaper's backstop to send — the server sees
// exactly one tasks/cancel for the task.
func TestTheHolderRecordsTheAnswerToItsTasksCancel(t *testing.T) {
	t.Parallel()
	for _, rev := range []string{mcp.Version20251125, mcp.Version20260728} {
		t.Run(rev, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := newTaskStack(t, rev)
			rt, _ := s.worker(t, "holder", nil)
			client := s.api(t, rt)
			run, err := client.CreateRun(ctx, &agent.Request{Prompt: "test", Script: taskScript(60000)})
			if err != nil {
				t.Fatal(err)
			}
			task := waitTask(t, client, run.ID, "had a task", func(d *api.RunDetail) bool { return len(d.Tasks) == 1 }).Tasks[0]
			if _, err := client.CancelRun(ctx, run.ID); err != nil {
				t.Fatal(err)
			}
			// The holder writes the task's row, then the audit row.
			rows := s.taskCancelRows(t, run.ID)
			if len(rows) != 1 || rows[0].Reason != string(agent.TaskCancelAcknowledged) || !rows[0].OK {
				t.Errorf("task_cancel audit rows = %+v; want one, acknowledged", rows)
			}
			d, err := client.GetRun(ctx, run.ID)
			if err != nil || len(d.Tasks) != 1 {
				t.Fatalf("GetRun: %+v, %v; want the run with its task", d, err)
			}
			// 2025-11-25 answers with the task, cancelled; a 2026-07-28
			// acknowledgement carries no status (cancelling is
			// cooperative), so the task reads cancelling until its
			// server says more.
			want := "cancelled"
			if rev == mcp.Version20260728 {
				want = "cancelling"
			}
			if got := d.Tasks[0]; got.CancelOutcome != string(agent.TaskCancelAcknowledged) || got.State != want {
				t.Errorf("task after the cancel = %+v; want the cancel acknowledged, state %s", got, want)
			}
			// The reaper's backstop finds nothing to cancel, however late.
			left, err := s.st.TasksToCancel(ctx, time.Now().Add(24*time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if len(left) != 0 {
				t.Errorf("tasks left for the reaper to cancel = %+v; want none", left)
			}
			rt.ReapTasks(ctx)
			if n := s.cancels(task.TaskID); n != 1 {
				t.Errorf("the server recorded %d tasks/cancel for %s; want 1", n, task.TaskID)
			}
			if rows := s.taskCancelRows(t, run.ID); len(rows) != 1 {
				t.Errorf("after a reap, %d task_cancel audit rows; want 1", len(rows))
			}
		})
	}
}

// A worker shut down gracefully while its call follows a task leaves the
// task running: no tasks/cancel, the handle persisted and unsettled, the
// fence stamped. The next worker takes the run over once the lease lapses
// and collects the task's result without calling the tool again.
func TestAShutdownLeavesTheTaskForTheNextWorker(t *testing.T) {
	t.Parallel()
	for _, rev := range []string{mcp.Version20251125, mcp.Version20260728} {
		t.Run(rev, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := newTaskStack(t, rev)
			short := func(c *agent.Config) {
				c.LeaseDuration = 2 * time.Second
				c.ReapInterval = 50 * time.Millisecond
			}
			first, shutdown := s.worker(t, "first", short)
			client := s.api(t, first)
			// Long enough to outlast the shutdown on a loaded machine,
			// short enough to be collected by the next worker.
			run, err := client.CreateRun(ctx, &agent.Request{Prompt: "test", Script: taskScript(8000)})
			if err != nil {
				t.Fatal(err)
			}
			task := waitTask(t, client, run.ID, "had a task", func(d *api.RunDetail) bool { return len(d.Tasks) == 1 }).Tasks[0]
			shutdown()

			if n := s.cancels(task.TaskID); n != 0 {
				t.Fatalf("the server recorded %d tasks/cancel for %s after a shutdown; want 0", n, task.TaskID)
			}
			d, err := client.GetRun(ctx, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			if d.Run.Status != string(agent.StatusRunning) || len(d.Steps) != 1 || d.Run.PendingEffect == "" ||
				len(d.Tasks) != 1 || d.Tasks[0].Settled || d.Tasks[0].CancelOutcome != "" {
				t.Fatalf("after the shutdown: status %s, %d steps, fence %q, tasks %+v; "+
					"want running, the model's step only, the fence stamped, the task open and not cancelled",
					d.Run.Status, len(d.Steps), d.Run.PendingEffect, d.Tasks)
			}

			next, _ := s.worker(t, "next", short)
			client = s.api(t, next)
			d = waitTask(t, client, run.ID, "completed", func(d *api.RunDetail) bool { return d.Run.Status == string(agent.StatusCompleted) })
			if calls := s.srv.ReceivedMessages("tools/call"); len(calls) != 1 {
				t.Errorf("the server saw %d tools/call; want 1 (the next worker follows the task)", len(calls))
			}
			if n := s.cancels(task.TaskID); n != 0 {
				t.Errorf("the server recorded %d tasks/cancel for %s; want 0", n, task.TaskID)
			}
			if len(d.Steps) < 2 || d.Steps[1].Tool != "mcp_test_task_wait" || d.Steps[1].Outcome != string(agent.OutcomeOK) {
				t.Errorf("steps = %+v; want the tool's step ok, from the task's result", d.Steps)
			}
			if got := d.Tasks[0]; !got.Settled || got.Status != string(agent.TaskCompleted) || d.Run.PendingEffect != "" {
				t.Errorf("task %+v, fence %q; want it settled completed and the fence down", got, d.Run.PendingEffect)
			}
		})
	}
}
