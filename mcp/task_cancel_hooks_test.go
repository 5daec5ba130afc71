package mcp_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// cancelAnswers collects what OnTaskCancel was told.
type cancelAnswers struct {
	n   atomic.Int32
	got chan cancelAnswer
}

type cancelAnswer struct {
	task mcp.Task
	err  error
}

func newCancelAnswers() *cancelAnswers { return &cancelAnswers{got: make(chan cancelAnswer, 4)} }

func (a *cancelAnswers) hook(t mcp.Task, err error) {
	a.n.Add(1)
	a.got <- cancelAnswer{t, err}
}

func (a *cancelAnswers) next(t *testing.T) cancelAnswer {
	t.Helper()
	select {
	case r := <-a.got:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("OnTaskCancel was never called")
		return cancelAnswer{}
	}
}

// assertOnce closes the client, which waits for the cancels on their way,
// and checks that OnTaskCancel ran exactly once.
func (a *cancelAnswers) assertOnce(t *testing.T, b *testBundle) {
	t.Helper()
	b.client.Close()
	if n := a.n.Load(); n != 1 {
		t.Errorf("OnTaskCancel ran %d times, want 1", n)
	}
}

// cancelOnCreate cancels ctx once the task exists.
func cancelOnCreate(t *testing.T, cancel context.CancelCauseFunc, cause error) *createdTasks {
	created := newCreated()
	go func() {
		created.next(t)
		cancel(cause)
	}()
	return created
}

func TestTaskCancelAnswerIsReportedOnce(t *testing.T) {
	runTasks(t, taskModes, nil, func(t *testing.T, b *testBundle) {
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		created := cancelOnCreate(t, cancel, nil)
		answers := newCancelAnswers()
		_, err := b.client.CallTool(ctx, "task_wait", nil, &mcp.CallOptions{
			Timeout: 30 * time.Second, OnTaskCreated: created.hook, OnTaskCancel: answers.hook})
		if !errors.Is(err, mcp.ErrCancelled) {
			t.Fatalf("err = %v, want ErrCancelled", err)
		}
		id := b.waitFor("task created", isTool(mcptest.TaskCreated, "task_wait")).Task
		got := answers.next(t)
		if got.err != nil || got.task.ID != id {
			t.Errorf("OnTaskCancel(%+v, %v), want task %s acknowledged (nil error)", got.task, got.err, id)
		}
		b.assertTaskCancelledOnce(id)
		answers.assertOnce(t, b)
	})
}

func TestTaskCancelRefusalIsReported(t *testing.T) {
	runTasks(t, []mode{inproc2026, inproc2025, http2025Tasks, http2026}, nil, func(t *testing.T, b *testBundle) {
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		created := cancelOnCreate(t, cancel, nil)
		answers := newCancelAnswers()
		_, err := b.client.CallTool(ctx, "task_reject_cancel", nil, &mcp.CallOptions{
			Timeout: 30 * time.Second, OnTaskCreated: created.hook, OnTaskCancel: answers.hook})
		if !errors.Is(err, mcp.ErrCancelled) {
			t.Fatalf("err = %v, want ErrCancelled", err)
		}
		id := b.waitFor("task created", isTool(mcptest.TaskCreated, "task_reject_cancel")).Task
		got := answers.next(t)
		var rpcErr *mcp.RPCError
		if !errors.As(got.err, &rpcErr) || got.task.ID != id {
			t.Errorf("OnTaskCancel(%+v, %v), want task %s refused with the server's *RPCError", got.task, got.err, id)
		}
		b.assertTaskCancelledOnce(id)
		answers.assertOnce(t, b)
	})
}

func TestTaskCancelWithoutAnAnswerIsReported(t *testing.T) {
	// The server goes away before the cancel can reach it (the hook's
	// error makes the client cancel the task).
	runTasks(t, []mode{inproc2026, inproc2025}, nil, func(t *testing.T, b *testBundle) {
		answers := newCancelAnswers()
		boom := errors.New("could not persist the handle")
		_, err := b.client.CallTool(context.Background(), "task_wait", nil, &mcp.CallOptions{
			Timeout:       30 * time.Second,
			OnTaskCreated: func(mcp.Task) error { b.server.Close(); return boom },
			OnTaskCancel:  answers.hook,
		})
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want the hook's error", err)
		}
		got := answers.next(t)
		if got.err == nil || errors.Is(got.err, mcp.ErrTaskTerminal) || errors.Is(got.err, mcp.ErrTaskNotFound) {
			t.Errorf("OnTaskCancel(%+v, %v), want an error saying no answer came", got.task, got.err)
		}
		if got.task.ID == "" {
			t.Error("OnTaskCancel was not told the task's id")
		}
		answers.assertOnce(t, b)
	})
}

var errShuttingDown = errors.New("test: shutting down")

func TestTaskDetachedOnShutdownIsLeftRunning(t *testing.T) {
	runTasks(t, sharedTaskModes, nil, func(t *testing.T, b *testBundle) {
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		created := cancelOnCreate(t, cancel, errShuttingDown)
		answers := newCancelAnswers()
		_, err := b.client.CallTool(ctx, "task_wait", nil, &mcp.CallOptions{
			Timeout:       30 * time.Second,
			OnTaskCreated: created.hook,
			OnTaskCancel:  answers.hook,
			DetachTask:    func(cause error) bool { return errors.Is(cause, errShuttingDown) },
		})
		if !errors.Is(err, mcp.ErrCancelled) || !errors.Is(err, errShuttingDown) {
			t.Fatalf("err = %v, want ErrCancelled with the shutdown's cause", err)
		}
		id := b.waitFor("task created", isTool(mcptest.TaskCreated, "task_wait")).Task
		b.client.Close() // waits for any tasks/cancel on its way
		if n := len(b.taskCancels()); n != 0 {
			t.Fatalf("server received %d tasks/cancel for a detached task, want 0", n)
		}
		if n := answers.n.Load(); n != 0 {
			t.Errorf("OnTaskCancel ran %d times for a detached task, want 0", n)
		}
		b.assertNoCancelledNotification()

		// Another client finds the task at work and can still stop it.
		other, err := mcp.Connect(context.Background(), b.otherTransport(t), &mcp.ClientOptions{ProtocolVersion: b.mode.version})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		task, err := other.GetTask(context.Background(), id, nil)
		if err != nil || task.Status != mcp.TaskWorking {
			t.Fatalf("GetTask(%s) = %+v, %v; want it working", id, task, err)
		}
		if _, err := other.CancelTask(context.Background(), id, nil); err != nil {
			t.Fatalf("CancelTask(%s): %v", id, err)
		}
	})
}

func TestTaskNotDetachedIsCancelled(t *testing.T) {
	// A cause DetachTask refuses, and the call's own Timeout, which
	// DetachTask is never asked about, both send tasks/cancel.
	runTasks(t, []mode{inproc2026, http2025Tasks}, nil, func(t *testing.T, b *testBundle) {
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		created := cancelOnCreate(t, cancel, errors.New("test: the run was cancelled"))
		detach := func(cause error) bool { return errors.Is(cause, errShuttingDown) }
		if _, err := b.client.CallTool(ctx, "task_wait", nil, &mcp.CallOptions{
			Timeout: 30 * time.Second, OnTaskCreated: created.hook, DetachTask: detach}); !errors.Is(err, mcp.ErrCancelled) {
			t.Fatalf("err = %v, want ErrCancelled", err)
		}
		b.assertTaskCancelledOnce(b.waitFor("task created", isTool(mcptest.TaskCreated, "task_wait")).Task)

		var asked atomic.Bool
		_, err := b.client.CallTool(context.Background(), "task_wait", nil, &mcp.CallOptions{
			Timeout: 300 * time.Millisecond, DetachTask: func(error) bool { asked.Store(true); return true }})
		if !errors.Is(err, mcp.ErrTimeout) {
			t.Fatalf("err = %v, want ErrTimeout", err)
		}
		b.waitFor("the second tasks/cancel", func(mcptest.Record) bool { return len(b.taskCancels()) == 2 })
		if asked.Load() {
			t.Error("DetachTask was asked about the call's own timeout")
		}
	})
}
