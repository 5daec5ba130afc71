package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// The modes in which tasks exist: 2025-11-25 (core) and 2026-07-28 (the
// extension), over a pipe, a subprocess's stdio and HTTP.
var (
	http2025Tasks     = mode{name: "http/2025-11-25/sse", version: mcp.Version20251125, http: &mcptest.HTTPOptions{}}
	http2025TasksJSON = mode{name: "http/2025-11-25/json", version: mcp.Version20251125, http: &mcptest.HTTPOptions{JSONResponse: true}}

	taskModes = []mode{inproc2026, inproc2025, stdio2026, stdio2025, http2026, http2026JSON, http2025Tasks, http2025TasksJSON}
	// sharedTaskModes have one server for many clients (not a subprocess
	// per connection): a task outlives the client that created it.
	sharedTaskModes = []mode{inproc2026, inproc2025, http2026, http2025Tasks}
)

// withTasks turns on the server's task tools.
func withTasks(more func(*setupOpts)) func(*setupOpts) {
	return func(o *setupOpts) {
		o.server.Tasks = true
		o.serverArgs = append(o.serverArgs, "-tasks")
		if more != nil {
			more(o)
		}
	}
}

func runTasks(t *testing.T, modes []mode, more func(*setupOpts), f func(t *testing.T, b *testBundle)) {
	t.Helper()
	runWith(t, modes, withTasks(more), f)
}

// taskCancels returns the tasks/cancel requests the server received.
func (b *testBundle) taskCancels() []mcptest.Record { return b.received("tasks/cancel") }

// assertTaskCancelledOnce checks the server received exactly one
// tasks/cancel, naming task id, and no notifications/cancelled at all.
func (b *testBundle) assertTaskCancelledOnce(id string) {
	b.t.Helper()
	b.waitFor("tasks/cancel", func(r mcptest.Record) bool { return r.Kind == mcptest.TaskCancelRequested && r.Task == id })
	cancels := b.taskCancels()
	if len(cancels) != 1 {
		b.t.Fatalf("server received %d tasks/cancel, want 1:\n%s", len(cancels), formatRecords(cancels))
	}
	if got := string(field(b.t, cancels[0].Params, "taskId")); got != fmt.Sprintf("%q", id) {
		b.t.Errorf("tasks/cancel taskId = %s, want %q", got, id)
	}
	b.assertNoCancelledNotification()
}

func (b *testBundle) assertNoCancelledNotification() {
	b.t.Helper()
	if n := b.received("notifications/cancelled"); len(n) != 0 {
		b.t.Errorf("server received notifications/cancelled for a task:\n%s", formatRecords(n))
	}
}

// assertStillServing checks the connection answers another call.
func (b *testBundle) assertStillServing() {
	b.t.Helper()
	if res := b.mustCall("echo", map[string]any{"text": "still here"}); res.Text() != "still here" {
		b.t.Errorf("echo after the task = %q", res.Text())
	}
}

// createdTasks collects the tasks OnTaskCreated reported.
type createdTasks struct {
	ids chan string
}

func newCreated() *createdTasks { return &createdTasks{ids: make(chan string, 4)} }

func (c *createdTasks) hook(t mcp.Task) error {
	c.ids <- t.ID
	return nil
}

func (c *createdTasks) next(t *testing.T) string {
	t.Helper()
	select {
	case id := <-c.ids:
		return id
	case <-time.After(20 * time.Second):
		t.Fatal("OnTaskCreated was never called")
		return ""
	}
}

func TestTaskRequiredToolRunsAsTaskAndCompletes(t *testing.T) {
	runTasks(t, taskModes, nil, func(t *testing.T, b *testBundle) {
		if !b.client.TasksSupported() {
			t.Fatalf("TasksSupported() = false on %s", b.client.ProtocolVersion())
		}
		created := newCreated()
		var statuses []mcp.TaskStatus
		res, err := b.client.CallTool(context.Background(), "task_wait", map[string]any{"ms": 30}, &mcp.CallOptions{
			Timeout:       20 * time.Second,
			OnTaskCreated: created.hook,
			OnTaskStatus:  func(t mcp.Task) { statuses = append(statuses, t.Status) },
		})
		if err != nil {
			t.Fatalf("CallTool: %v", err)
		}
		if got := res.Text(); got != "task_wait: worked 30ms" {
			t.Errorf("result = %q", got)
		}
		id := created.next(t)
		if len(created.ids) != 0 {
			t.Errorf("OnTaskCreated called more than once")
		}
		rec := b.waitFor("task created", isTool(mcptest.TaskCreated, "task_wait"))
		if rec.Task != id {
			t.Errorf("OnTaskCreated got %q, the server created %q", id, rec.Task)
		}
		if len(statuses) == 0 || statuses[len(statuses)-1] != mcp.TaskCompleted {
			t.Errorf("OnTaskStatus saw %v, want it to end with completed", statuses)
		}
		call := b.received("tools/call")[0]
		hasTaskParam := field(t, call.Params, "task") != nil
		if want := b.mode.version == mcp.Version20251125; hasTaskParam != want {
			t.Errorf("tools/call params.task present = %v, want %v: %s", hasTaskParam, want, call.Params)
		}
		if b.mode.version == mcp.Version20251125 && len(b.received("tasks/result")) != 1 {
			t.Errorf("tasks/result sent %d times, want 1", len(b.received("tasks/result")))
		}
		if len(b.taskCancels()) != 0 {
			t.Errorf("a completed task was cancelled")
		}
		if b.mode.modernHTTP() {
			// The extension routes task methods by task id.
			for _, r := range b.received("tasks/get") {
				if got := r.Header.Get("Mcp-Name"); got != id || r.Header.Get("Mcp-Method") != "tasks/get" {
					t.Errorf("tasks/get headers Mcp-Name %q Mcp-Method %q, want %q and tasks/get", got, r.Header.Get("Mcp-Method"), id)
				}
			}
		}
		b.assertNoCancelledNotification()
	})
}

func TestTaskCancelledContextSendsTasksCancelOnce(t *testing.T) {
	runTasks(t, taskModes, nil, func(t *testing.T, b *testBundle) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		created := newCreated()
		go func() {
			created.next(t)
			cancel()
		}()
		var after atomic.Bool
		_, err := b.client.CallTool(ctx, "task_wait", nil, &mcp.CallOptions{
			Timeout:       30 * time.Second,
			OnTaskCreated: created.hook,
			OnTaskStatus: func(mcp.Task) {
				if after.Load() {
					t.Error("OnTaskStatus after the call returned")
				}
			},
		})
		after.Store(true)
		if !errors.Is(err, mcp.ErrCancelled) || !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want ErrCancelled", err)
		}
		id := b.waitFor("task created", isTool(mcptest.TaskCreated, "task_wait")).Task
		b.assertTaskCancelledOnce(id)
		b.waitFor("the task's work to stop", func(r mcptest.Record) bool { return r.Kind == mcptest.TaskCancelled && r.Task == id })
		b.assertStillServing()
	})
}

func TestTaskDeadlineSendsTasksCancelOnce(t *testing.T) {
	runTasks(t, taskModes, nil, func(t *testing.T, b *testBundle) {
		created := newCreated()
		_, err := b.client.CallTool(context.Background(), "task_wait", nil, &mcp.CallOptions{
			Timeout:       300 * time.Millisecond, // the task would work 60s
			OnTaskCreated: created.hook,
		})
		if !errors.Is(err, mcp.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want ErrTimeout", err)
		}
		id := created.next(t)
		b.assertTaskCancelledOnce(id)
		b.assertStillServing()
	})
}

func TestTaskCallerDeadlineSendsTasksCancel(t *testing.T) {
	runTasks(t, []mode{inproc2025, http2026}, nil, func(t *testing.T, b *testBundle) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		created := newCreated()
		_, err := b.client.CallTool(ctx, "task_wait", nil, &mcp.CallOptions{OnTaskCreated: created.hook})
		if !errors.Is(err, mcp.ErrTimeout) {
			t.Fatalf("err = %v, want ErrTimeout", err)
		}
		b.assertTaskCancelledOnce(created.next(t))
	})
}

func TestTaskFailed(t *testing.T) {
	runTasks(t, taskModes, nil, func(t *testing.T, b *testBundle) {
		res, err := b.client.CallTool(context.Background(), "task_fail", map[string]any{"message": "disk on fire"}, &mcp.CallOptions{Timeout: 20 * time.Second})
		if b.mode.version == mcp.Version20251125 {
			// The tool failed with a result: that result, not an error.
			if err != nil {
				t.Fatalf("CallTool: %v", err)
			}
			if !res.IsError || res.Text() != "disk on fire" {
				t.Errorf("result = %+v, want isError with the message", res)
			}
			return
		}
		var te *mcp.TaskError
		if !errors.As(err, &te) || te.Status != mcp.TaskFailed {
			t.Fatalf("err = %v, want a failed *TaskError", err)
		}
		if !errors.Is(err, &mcp.RPCError{Code: mcp.CodeInternalError}) || !strings.Contains(err.Error(), "disk on fire") {
			t.Errorf("err = %v, want the task's JSON-RPC error", err)
		}
		if errors.Is(err, mcp.ErrCancelled) {
			t.Errorf("a failed task matches ErrCancelled")
		}
	})
}

func TestTaskInputRequiredAnsweredByElicitationHandler(t *testing.T) {
	modes := slices.DeleteFunc(slices.Clone(taskModes), func(m mode) bool { return m == http2025TasksJSON }) // no server requests in a JSON response
	var asked atomic.Int32
	runTasks(t, modes, func(o *setupOpts) {
		o.client.ElicitationHandler = func(ctx context.Context, params json.RawMessage) (any, error) {
			asked.Add(1)
			if !strings.Contains(string(params), "Please enter your name.") {
				return nil, fmt.Errorf("unexpected elicitation %s", params)
			}
			return map[string]any{"action": "accept", "content": map[string]any{"name": "andon"}}, nil
		}
	}, func(t *testing.T, b *testBundle) {
		var sawInput bool
		res, err := b.client.CallTool(context.Background(), "task_ask", nil, &mcp.CallOptions{
			Timeout:      20 * time.Second,
			OnTaskStatus: func(t mcp.Task) { sawInput = sawInput || t.Status == mcp.TaskInputRequired },
		})
		if err != nil {
			t.Fatalf("CallTool: %v", err)
		}
		if res.Text() != "hello, andon" {
			t.Errorf("result = %q", res.Text())
		}
		b.waitFor("the answer", func(r mcptest.Record) bool { return r.Kind == mcptest.TaskInputAnswered })
		if b.mode.version == mcp.Version20260728 {
			if n := len(b.received("tasks/update")); n != 1 {
				t.Errorf("tasks/update sent %d times, want 1 (a key is answered once)", n)
			}
			if !sawInput {
				t.Errorf("OnTaskStatus never saw input_required")
			}
		}
		if asked.Load() == 0 {
			t.Error("the elicitation handler was never asked")
		}
	})
}

func TestTaskIgnoringCancelDoesNotHoldTheCaller(t *testing.T) {
	runTasks(t, taskModes, nil, func(t *testing.T, b *testBundle) {
		ctx, cancel := context.WithCancel(context.Background())
		created := newCreated()
		go func() {
			created.next(t)
			cancel()
		}()
		var returned atomic.Bool
		_, err := b.client.CallTool(ctx, "task_stubborn", map[string]any{"ms": 400}, &mcp.CallOptions{
			Timeout:       30 * time.Second,
			OnTaskCreated: created.hook,
			OnTaskStatus: func(t mcp.Task) {
				if returned.Load() {
					panic("OnTaskStatus after return")
				}
			},
		})
		returned.Store(true)
		if !errors.Is(err, mcp.ErrCancelled) {
			t.Fatalf("err = %v, want ErrCancelled", err)
		}
		id := b.waitFor("task created", isTool(mcptest.TaskCreated, "task_stubborn")).Task
		b.assertTaskCancelledOnce(id)
		// The task finishes on the server anyway; nothing of it reaches
		// the next call.
		b.waitFor("the stubborn task to finish", func(r mcptest.Record) bool { return r.Kind == mcptest.TaskFinished && r.Task == id })
		if b.mode.http == nil && b.mode.version == mcp.Version20251125 {
			// Its final status notification still comes (2025-11-25 over
			// a stream) and is dropped: no call follows the task now.
			deadline := time.Now().Add(20 * time.Second)
			for len(b.logs.lines("dropping status of a task no call follows", id)) == 0 {
				if time.Now().After(deadline) {
					t.Fatalf("the late status of %s was not dropped; log:\n%s", id, b.logs)
				}
				time.Sleep(time.Millisecond)
			}
		}
		res := b.mustCall("task_echo", map[string]any{"text": "next"})
		if res.Text() != "next" {
			t.Errorf("the next call got %q", res.Text())
		}
	})
}

func TestTaskCancelRejectedIsLogged(t *testing.T) {
	runTasks(t, []mode{inproc2026, inproc2025, http2025Tasks}, nil, func(t *testing.T, b *testBundle) {
		ctx, cancel := context.WithCancel(context.Background())
		created := newCreated()
		go func() {
			created.next(t)
			cancel()
		}()
		_, err := b.client.CallTool(ctx, "task_reject_cancel", nil, &mcp.CallOptions{Timeout: 30 * time.Second, OnTaskCreated: created.hook})
		if !errors.Is(err, mcp.ErrCancelled) {
			t.Fatalf("err = %v, want ErrCancelled (a refused tasks/cancel changes nothing for the caller)", err)
		}
		b.assertTaskCancelledOnce(b.waitFor("task created", isTool(mcptest.TaskCreated, "task_reject_cancel")).Task)
		deadline := time.Now().Add(10 * time.Second)
		for len(b.logs.lines("could not cancel task")) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the refused tasks/cancel was not logged:\n%s", b.logs)
			}
			time.Sleep(time.Millisecond)
		}
		b.assertStillServing()
	})
}

func TestTaskGetStallingIsBoundedByTheCallBudget(t *testing.T) {
	runTasks(t, []mode{inproc2026, inproc2025, stdio2026, http2026, http2025Tasks}, func(o *setupOpts) {
		o.server.Stall = []string{"tasks/get"}
		o.serverArgs = append(o.serverArgs, "-stall", "tasks/get")
		o.client.RequestTimeout = 100 * time.Millisecond // each poll
	}, func(t *testing.T, b *testBundle) {
		created := newCreated()
		_, err := b.client.CallTool(context.Background(), "task_wait", nil, &mcp.CallOptions{Timeout: time.Second, OnTaskCreated: created.hook})
		if !errors.Is(err, mcp.ErrTimeout) {
			t.Fatalf("err = %v, want ErrTimeout", err)
		}
		b.assertTaskCancelledOnce(created.next(t))
	})
}

func TestTaskForgottenIsNotFound(t *testing.T) {
	runTasks(t, taskModes, nil, func(t *testing.T, b *testBundle) {
		_, err := b.client.CallTool(context.Background(), "task_forget", nil, &mcp.CallOptions{Timeout: 20 * time.Second})
		if !errors.Is(err, mcp.ErrTaskNotFound) {
			t.Fatalf("err = %v, want ErrTaskNotFound", err)
		}
		if !errors.Is(err, &mcp.RPCError{Code: mcp.CodeInvalidParams}) {
			t.Errorf("err = %v, want it to carry the server's -32602", err)
		}
	})
}

func TestTaskTTLExpiryIsNotFound(t *testing.T) {
	runTasks(t, []mode{inproc2026, inproc2025, stdio2025, http2026}, nil, func(t *testing.T, b *testBundle) {
		_, err := b.client.CallTool(context.Background(), "task_wait", map[string]any{"ttl_ms": 100}, &mcp.CallOptions{Timeout: 20 * time.Second})
		if !errors.Is(err, mcp.ErrTaskNotFound) {
			t.Fatalf("err = %v, want ErrTaskNotFound", err)
		}
		b.waitFor("the task to expire", func(r mcptest.Record) bool { return r.Kind == mcptest.TaskExpired })
	})
}

func TestTaskOnTaskCreatedErrorCancelsTheTask(t *testing.T) {
	runTasks(t, []mode{inproc2026, stdio2025, http2025Tasks}, nil, func(t *testing.T, b *testBundle) {
		boom := errors.New("could not persist the handle")
		_, err := b.client.CallTool(context.Background(), "task_wait", nil, &mcp.CallOptions{
			Timeout:       20 * time.Second,
			OnTaskCreated: func(mcp.Task) error { return boom },
		})
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want the hook's error", err)
		}
		b.assertTaskCancelledOnce(b.waitFor("task created", isTool(mcptest.TaskCreated, "task_wait")).Task)
	})
}

func TestTaskOptionalRunsAsTaskOnlyWhenAsked(t *testing.T) {
	runTasks(t, []mode{inproc2025, http2025Tasks}, nil, func(t *testing.T, b *testBundle) {
		res := b.mustCall("task_echo", map[string]any{"text": "plain"})
		if res.Text() != "plain" {
			t.Errorf("plain call = %q", res.Text())
		}
		created := newCreated()
		res, err := b.client.CallTool(context.Background(), "task_echo", map[string]any{"text": "as a task"}, &mcp.CallOptions{Task: true, Timeout: 20 * time.Second, OnTaskCreated: created.hook})
		if err != nil || res.Text() != "as a task" {
			t.Fatalf("CallTool = %v, %v", res, err)
		}
		created.next(t)
		if n := len(b.waitForAll(mcptest.TaskCreated)); n != 1 {
			t.Errorf("%d tasks created, want 1 (only the call that asked)", n)
		}
	})
}

// waitForAll returns every record of kind.
func (b *testBundle) waitForAll(kind string) []mcptest.Record {
	var out []mcptest.Record
	for _, r := range b.records() {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

func TestTaskToolsListTaskSupport(t *testing.T) {
	runTasks(t, []mode{inproc2025, inproc2026}, nil, func(t *testing.T, b *testBundle) {
		tools, err := b.client.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]mcp.TaskSupport{}
		for _, tl := range tools {
			got[tl.Name] = tl.TaskSupport
		}
		for name, want := range map[string]mcp.TaskSupport{"echo": mcp.TaskForbidden, "task_wait": mcp.TaskRequired, "task_echo": mcp.TaskOptional} {
			if got[name] != want {
				t.Errorf("%s: TaskSupport = %q, want %q", name, got[name], want)
			}
		}
	})
}

func TestTasksUnsupportedWithoutTasks(t *testing.T) {
	run(t, []mode{inproc2026, inproc2025, inproc2024}, func(t *testing.T, b *testBundle) {
		if b.client.TasksSupported() {
			t.Errorf("TasksSupported() = true for a server without tasks")
		}
		for _, err := range b.client.ListTasks(context.Background(), nil) {
			if b.mode.version == mcp.Version20251125 {
				break // the method exists; the server refuses it
			}
			if !errors.Is(err, errors.ErrUnsupported) {
				t.Errorf("ListTasks: %v, want ErrUnsupported", err)
			}
		}
		if b.mode.version == mcp.Version20241105 {
			if _, err := b.client.GetTask(context.Background(), "x", nil); !errors.Is(err, errors.ErrUnsupported) {
				t.Errorf("GetTask on 2024-11-05: %v, want ErrUnsupported", err)
			}
			if len(b.received("tasks/get")) != 0 {
				t.Errorf("tasks/get sent on a revision without it")
			}
		}
	})
}

func TestTaskExplicitGetListCancelFromAnotherClient(t *testing.T) {
	runTasks(t, sharedTaskModes, nil, func(t *testing.T, b *testBundle) {
		other, err := mcp.Connect(context.Background(), b.otherTransport(t), &mcp.ClientOptions{ProtocolVersion: b.mode.version})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()

		created := newCreated()
		errc := make(chan error, 1)
		go func() {
			_, err := b.client.CallTool(context.Background(), "task_wait", nil, &mcp.CallOptions{Timeout: 30 * time.Second, OnTaskCreated: created.hook})
			errc <- err
		}()
		id := created.next(t)

		ctx := context.Background()
		task, err := other.GetTask(ctx, id, nil)
		if err != nil {
			t.Fatalf("GetTask: %v", err)
		}
		if task.ID != id || task.Status != mcp.TaskWorking || task.CreatedAt.IsZero() || task.PollInterval == 0 {
			t.Errorf("GetTask = %+v", task)
		}
		if b.mode.version == mcp.Version20251125 {
			var listed []string
			for tk, err := range other.ListTasks(ctx, nil) {
				if err != nil {
					t.Fatalf("ListTasks: %v", err)
				}
				listed = append(listed, tk.ID)
			}
			if !slices.Contains(listed, id) {
				t.Errorf("ListTasks = %v, want %s among them", listed, id)
			}
		} else {
			for _, err := range other.ListTasks(ctx, nil) {
				if !errors.Is(err, errors.ErrUnsupported) {
					t.Errorf("ListTasks on 2026-07-28: %v, want ErrUnsupported", err)
				}
			}
		}
		answer, err := other.CancelTask(ctx, id, nil)
		if err != nil {
			t.Fatalf("CancelTask: %v", err)
		}
		if answer.ID != id {
			t.Errorf("CancelTask answered for %q", answer.ID)
		}
		if b.mode.version == mcp.Version20251125 && answer.Status != mcp.TaskCancelled {
			t.Errorf("2025-11-25 CancelTask status = %q, want cancelled", answer.Status)
		}
		// The call that created it ends with the task: cancelled.
		err = <-errc
		var te *mcp.TaskError
		if !errors.As(err, &te) || te.Status != mcp.TaskCancelled || !errors.Is(err, mcp.ErrCancelled) {
			t.Fatalf("the creating call: %v, want a cancelled *TaskError", err)
		}
		if b.mode.version == mcp.Version20251125 {
			if _, err := other.CancelTask(ctx, id, nil); !errors.Is(err, mcp.ErrTaskTerminal) {
				t.Errorf("second CancelTask: %v, want ErrTaskTerminal", err)
			}
		}
		if _, err := other.GetTask(ctx, "no-such-task", nil); !errors.Is(err, mcp.ErrTaskNotFound) {
			t.Errorf("GetTask of an unknown id: %v, want ErrTaskNotFound", err)
		}
		if _, err := other.CancelTask(ctx, "no-such-task", nil); !errors.Is(err, mcp.ErrTaskNotFound) {
			t.Errorf("CancelTask of an unknown id: %v, want ErrTaskNotFound", err)
		}
		b.assertNoCancelledNotification()
	})
}

func TestFollowTaskStartedByAClientThatWentAway(t *testing.T) {
	runTasks(t, sharedTaskModes, nil, func(t *testing.T, b *testBundle) {
		created := newCreated()
		errc := make(chan error, 1)
		go func() {
			_, err := b.client.CallTool(context.Background(), "task_wait", map[string]any{"ms": 500}, &mcp.CallOptions{Timeout: 30 * time.Second, OnTaskCreated: created.hook})
			errc <- err
		}()
		id := created.next(t)
		b.client.Close() // the process that started the task is gone
		if err := <-errc; !errors.Is(err, mcp.ErrClosed) {
			t.Fatalf("the first call: %v, want ErrClosed", err)
		}
		if n := len(b.taskCancels()); n != 0 {
			t.Fatalf("Close cancelled the task (%d tasks/cancel): the handle must stay usable", n)
		}

		other, err := mcp.Connect(context.Background(), b.otherTransport(t), &mcp.ClientOptions{ProtocolVersion: b.mode.version})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		var seen []mcp.TaskStatus
		res, err := other.FollowTask(context.Background(), id, &mcp.CallOptions{Timeout: 30 * time.Second, OnTaskStatus: func(t mcp.Task) { seen = append(seen, t.Status) }})
		if err != nil {
			t.Fatalf("FollowTask: %v", err)
		}
		if res.Text() != "task_wait: worked 500ms" {
			t.Errorf("result = %q", res.Text())
		}
		if len(seen) == 0 || seen[len(seen)-1] != mcp.TaskCompleted {
			t.Errorf("OnTaskStatus saw %v", seen)
		}
		if n := len(b.received("tools/call")); n != 1 {
			t.Errorf("the server saw %d tools/call, want 1: following does not call again", n)
		}
	})
}

func TestFollowTaskCancelledSendsTasksCancel(t *testing.T) {
	runTasks(t, []mode{inproc2025, http2026}, nil, func(t *testing.T, b *testBundle) {
		created := newCreated()
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			b.client.CallTool(ctx, "task_wait", nil, &mcp.CallOptions{Timeout: 30 * time.Second, OnTaskCreated: func(t mcp.Task) error {
				created.hook(t)
				return nil
			}})
		}()
		id := created.next(t)
		other, err := mcp.Connect(context.Background(), b.otherTransport(t), &mcp.ClientOptions{ProtocolVersion: b.mode.version})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		_, err = other.FollowTask(context.Background(), id, &mcp.CallOptions{Timeout: 300 * time.Millisecond})
		if !errors.Is(err, mcp.ErrTimeout) {
			t.Fatalf("FollowTask: %v, want ErrTimeout", err)
		}
		b.assertTaskCancelledOnce(id)
		cancel()
	})
}

func TestTaskProgressUntilTerminal(t *testing.T) {
	runTasks(t, []mode{inproc2025, stdio2025}, nil, func(t *testing.T, b *testBundle) {
		var got []mcp.Progress
		res, err := b.client.CallTool(context.Background(), "task_wait", map[string]any{"ms": 50}, &mcp.CallOptions{
			Timeout:    20 * time.Second,
			OnProgress: func(p mcp.Progress) { got = append(got, p) },
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Text() == "" {
			t.Error("no result")
		}
		if len(got) != 1 || got[0].Message != "task started" {
			t.Errorf("progress = %+v, want the task's one report", got)
		}
	})
}

// otherTransport reaches the same server as b's client, on a new
// connection.
func (b *testBundle) otherTransport(t *testing.T) mcp.Transport {
	t.Helper()
	if b.server == nil {
		t.Fatal("otherTransport needs an in-process server")
	}
	if b.mode.http == nil {
		return b.server.Transport()
	}
	return b.httpTransport()
}

// TestTaskCreatedAfterItsCallWasAbandonedIsCancelled: a call cancelled
// before the server answered with its task (the server creates it once the
// call is cancelled, and answers anyway) leaves no task running: the late CreateTaskResult is
// answered with tasks/cancel, and nothing of it reaches the caller.
func TestTaskCreatedAfterItsCallWasAbandonedIsCancelled(t *testing.T) {
	runTasks(t, []mode{inproc2026, inproc2025, stdio2025}, nil, func(t *testing.T, b *testBundle) {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { // once the tools/call is in; the server creates the task only then
			defer cancel()
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				if len(b.received("tools/call")) > 0 {
					return
				}
			}
		}()
		var created atomic.Bool
		_, err := b.client.CallTool(ctx, "task_wait", map[string]any{"create_late": true}, &mcp.CallOptions{
			Timeout:       20 * time.Second,
			OnTaskCreated: func(mcp.Task) error { created.Store(true); return nil },
		})
		if !errors.Is(err, mcp.ErrCancelled) {
			t.Fatalf("err = %v, want ErrCancelled", err)
		}
		id := b.waitFor("the late task", isTool(mcptest.TaskCreated, "task_wait")).Task
		b.waitFor("tasks/cancel of the late task", func(r mcptest.Record) bool { return r.Kind == mcptest.TaskCancelRequested && r.Task == id })
		if created.Load() {
			t.Error("OnTaskCreated ran for a call that had already returned")
		}
		b.assertStillServing()
	})
}

// TestTaskSupportLookedUpOncePerTool: on 2025-11-25 a tool the client has
// not listed is looked up with one tools/list, and not again, even when the
// server does not have it.
func TestTaskSupportLookedUpOncePerTool(t *testing.T) {
	runTasks(t, []mode{inproc2025}, nil, func(t *testing.T, b *testBundle) {
		for range 3 {
			b.mustCall("echo", map[string]any{"text": "x"})
			b.client.CallTool(context.Background(), "no_such_tool", nil, nil)
		}
		if n := len(b.received("tools/list")); n != 1 {
			t.Errorf("tools/list sent %d times, want 1", n)
		}
	})
}
