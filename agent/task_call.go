package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// The executor's side of MCP tasks: a call that becomes a task has its
// handle persisted before the call waits for it; a call found with a task
// that no step answers (a worker died during it) is followed on the server
// instead of being made again.

// taskBookkeeping bounds each store write about a task: they outlive the
// call's context, which may have just been cancelled.
const taskBookkeeping = 10 * time.Second

// inTask is the task of the call a segment has in flight, once the call
// became one: the step boundary settles it, right after the call's step is
// recorded and before the fence comes down.
type inTask struct {
	ref   CallRef
	final TaskStatus // what the call's result says of the task; "" if nothing
}

// callTool makes the call: as before, when the store keeps no tasks; else
// with a [TaskTrace] that persists the task the call may become, or, when
// the call has a task that no step answers, by following that task.
func (s *segment) callTool(ctx context.Context, tool Tool, call CallRef, args []byte) (*ToolResult, error) {
	ts := s.rt.tasks
	if ts == nil {
		return tool.Call(ctx, args)
	}
	var open *Task
	if !s.asked[call.Step] {
		// A call this segment's own model step asked for was never made
		// before: no task of it can exist, and there is nothing to read.
		var err error
		if open, err = ts.TaskGet(ctx, call); err != nil {
			return nil, fmt.Errorf("agent: reading the task of the call: %w", err)
		}
	}
	status := newStatusWriter(ctx, s.rt, call)
	defer status.close()
	trace := &TaskTrace{Status: status.report, Cancelled: func(o TaskCancelOutcome, st *TaskState) {
		s.rt.recordTaskCancel(ctx, call, o, st, byHolder)
	}, Detach: func(cause error) bool {
		// A shutdown is not a cancel of the run, nor is a lost lease
		// (another segment holds the run now): the task is durable
		// remote work, which the worker that has the run follows.
		return !s.cancelled(ctx) && (s.parent.Err() != nil || errors.Is(cause, ErrLeaseLost))
	}}
	if open != nil && !open.Settled {
		// Taken over mid-task: ask the server, never call again.
		if s.rt.taskTools == nil {
			return nil, fmt.Errorf("%w: no tools reach the task's server", ErrTaskUnknown)
		}
		s.task = &inTask{ref: call}
		s.rt.logger.Info("agent: following the task of an interrupted call", "run", call.RunID, "tool", call.Tool, "task", open.ID, "server", open.Server)
		res, err := s.rt.taskTools.FollowTask(ctx, open, trace)
		s.task.final = finalStatus(res, err)
		return res, err
	}
	trace.Created = func(t *Task) error {
		t.CallRef = call
		if t.CreatedAt.IsZero() {
			t.CreatedAt = s.rt.cfg.Now()
		}
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), taskBookkeeping)
		defer cancel()
		ok, err := ts.TaskRecord(bctx, s.owner, t)
		if err != nil {
			return fmt.Errorf("agent: persisting the task's handle: %w", err)
		}
		if !ok {
			return fmt.Errorf("agent: persisting the task's handle: %w", ErrLeaseLost)
		}
		s.task = &inTask{ref: call}
		return nil
	}
	res, err := tool.Call(WithTaskTrace(ctx, trace), args)
	if s.task != nil {
		s.task.final = finalStatus(res, err)
	}
	return res, err
}

// finalStatus is what a call's result says of its task: a result the tool
// returned (its output, or its reported failure) means the task completed.
// A cancelled or failed call says nothing: the task may be at work still,
// and the reaper's backstop sends tasks/cancel for it once the run ends.
func finalStatus(res *ToolResult, err error) TaskStatus {
	if err != nil || res == nil {
		return ""
	}
	switch res.Outcome {
	case OutcomeOK, OutcomeError:
		return TaskCompleted
	}
	return ""
}

// settleTask marks the task of the call in flight as answered by the step
// just recorded: from now on a worker that takes the run over does not
// follow it. It runs between the step's append and the fence coming down.
func (s *segment) settleTask(ctx context.Context) {
	if s.task == nil {
		return
	}
	t := s.task
	s.task = nil
	if err := s.rt.tasks.TaskSettle(ctx, t.ref, t.final); err != nil {
		s.rt.logger.Warn("agent: settling a task failed", "run", t.ref.RunID, "error", err)
	}
}

// taskUnknown ends a run whose call's task the server cannot account for:
// the write may have happened, and nobody can say. The fence stays
// stamped and the run is dead-lettered, as a run found mid-write is.
func (s *segment) taskUnknown(ctx context.Context, call CallRef, cause error) error {
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), taskBookkeeping)
	defer cancel()
	s.task = nil
	s.rt.logger.Warn("agent: the server cannot say what became of a task; dead-lettering the run", "run", call.RunID, "tool", call.Tool, "error", cause)
	if _, err := s.rt.tasks.TaskSetStatus(bctx, call, TaskState{Status: TaskUnknown}, s.rt.cfg.Now()); err != nil {
		s.rt.logger.Warn("agent: recording a task as unknown failed", "run", call.RunID, "error", err)
	}
	ok, err := s.rt.cfg.Store.RunFinish(bctx, s.run.ID, s.owner, StatusFailed, ReasonNotRetryable,
		"interrupted during a task its server cannot account for; not retried")
	if err != nil || !ok {
		return s.lost(bctx)
	}
	return stopTaskUnknown
}

var stopTaskUnknown = &errStop{"dead-lettered: the server cannot say what became of the task"}

// statusWriter records the statuses a task reports, off the goroutine that
// reports them (an MCP client's reader must not wait for the database),
// keeping only the newest one not yet written.
type statusWriter struct {
	rt   *Runtime
	ref  CallRef
	ctx  context.Context
	mu   sync.Mutex
	next *TaskState
	wake chan struct{}
	done chan struct{}
}

func newStatusWriter(ctx context.Context, rt *Runtime, ref CallRef) *statusWriter {
	w := &statusWriter{rt: rt, ref: ref, ctx: context.WithoutCancel(ctx), wake: make(chan struct{}, 1), done: make(chan struct{})}
	go w.run(w.wake)
	return w
}

func (w *statusWriter) report(st TaskState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wake == nil { // closed: the call has returned
		return
	}
	w.next = &st
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *statusWriter) run(wake <-chan struct{}) {
	defer close(w.done)
	for range wake {
		w.flush()
	}
	w.flush()
}

func (w *statusWriter) flush() {
	w.mu.Lock()
	st := w.next
	w.next = nil
	w.mu.Unlock()
	if st == nil {
		return
	}
	ctx, cancel := context.WithTimeout(w.ctx, taskBookkeeping)
	defer cancel()
	if _, err := w.rt.tasks.TaskSetStatus(ctx, w.ref, *st, w.rt.cfg.Now()); err != nil {
		w.rt.logger.Warn("agent: recording a task's status failed", "run", w.ref.RunID, "error", err)
	}
}

// close writes what is left and waits: once the call has returned, its
// statuses are in the store. A report after close is dropped.
func (w *statusWriter) close() {
	w.mu.Lock()
	if w.wake != nil {
		close(w.wake)
		w.wake = nil
	}
	w.mu.Unlock()
	<-w.done
}
