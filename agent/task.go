package agent

import (
	"context"
	"errors"
	"time"
)

// TaskStatus is what a tool call's task is doing on its server, as the
// server last said (MCP tasks: 2025-11-25 core, the 2026-07-28 extension).
type TaskStatus string

// The statuses of a task. Completed, failed and cancelled are terminal.
// TaskUnknown is andon's: the server could no longer say (it forgot the
// task, or it let it expire).
const (
	TaskWorking       TaskStatus = "working"
	TaskInputRequired TaskStatus = "input_required"
	TaskCompleted     TaskStatus = "completed"
	TaskFailed        TaskStatus = "failed"
	TaskCancelled     TaskStatus = "cancelled"
	TaskUnknown       TaskStatus = "unknown"
)

// Terminal reports whether the task will not change again.
func (s TaskStatus) Terminal() bool {
	return s == TaskCompleted || s == TaskFailed || s == TaskCancelled || s == TaskUnknown
}

// TaskCancelOutcome is what a task's server said to a tasks/cancel.
type TaskCancelOutcome string

// Outcomes of a tasks/cancel.
const (
	// TaskCancelAcknowledged: the server answered tasks/cancel without an
	// error.
	TaskCancelAcknowledged TaskCancelOutcome = "acknowledged"
	// TaskCancelRejected: the server answered with an error (it does not
	// know the task, or the task was terminal already).
	TaskCancelRejected TaskCancelOutcome = "rejected"
	// TaskCancelUnreachable: no answer came (the server is gone, the
	// connection failed, the bound passed).
	TaskCancelUnreachable TaskCancelOutcome = "unreachable"
)

// ErrTaskUnknown reports a task its server cannot account for: it does not
// know the id (it forgot it, or the task expired), or it cannot be reached
// to ask. A worker that takes over a run mid-task and gets it leaves the
// write fence stamped and dead-letters the run.
var ErrTaskUnknown = errors.New("agent: the server cannot say what became of the task")

// Task is a tool call that became a task on its MCP server: a durable
// handle on remote work. It is persisted (a [TaskStore]) before the call
// counts as in flight, so that any process can cancel it and a worker that
// takes over the run asks the server what became of it instead of calling
// the tool again.
type Task struct {
	// CallRef names the call: the run, the model step that asked for it,
	// its place in that step, the tool (its local name) and the digest of
	// its arguments.
	CallRef
	// Server is the name of the tool's server; ID is the server's id of
	// the task; Revision is the protocol revision of the session that
	// created it, which says how to ask after it.
	Server   string
	ID       string
	Revision string
	// Status and StatusMessage are what the server said last.
	Status        TaskStatus
	StatusMessage string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// CancelAt is when tasks/cancel was last sent for the task (zero:
	// never), and CancelOutcome what the server said to it.
	CancelAt      time.Time
	CancelOutcome TaskCancelOutcome
	// Settled reports that the call's step is recorded: the task is no
	// longer the call in flight.
	Settled bool
}

// TaskState is a task's status as its server reports it.
type TaskState struct {
	Status  TaskStatus
	Message string
}

// TaskStore keeps the task handles of tool calls. A [Store] that also
// implements it (package sqlstore's does) makes the runtime persist every
// task a call becomes, cancel it from any process, and take over a run
// found mid-task. Every method is one statement.
type TaskStore interface {
	// TaskRecord stores the handle of a call that became a task, for the
	// segment owner, which must hold the run (running): the guard and the
	// insert are one statement. It reports false, storing nothing, if
	// owner does not hold the run or the call has a task already.
	TaskRecord(ctx context.Context, owner string, t *Task) (bool, error)
	// TaskGet returns the task of one call, or nil if the call has none.
	TaskGet(ctx context.Context, ref CallRef) (*Task, error)
	// TaskList returns a run's tasks, by step and call.
	TaskList(ctx context.Context, runID string) ([]*Task, error)
	// TaskSetStatus records what the server said of a task. A terminal
	// status is never replaced: a late report changes nothing (false).
	TaskSetStatus(ctx context.Context, ref CallRef, st TaskState, at time.Time) (bool, error)
	// TaskSetCancel records a tasks/cancel sent at at and what the server
	// said to it.
	TaskSetCancel(ctx context.Context, ref CallRef, outcome TaskCancelOutcome, at time.Time) error
	// TaskSettle marks the task of a call whose step is recorded and, if
	// final is not empty and the stored status is still open, records
	// final: the call's result says the task is over.
	TaskSettle(ctx context.Context, ref CallRef, final TaskStatus) error
	// TasksToCancel lists the tasks that a cancel must still reach: open
	// (working or input_required), with no tasks/cancel sent or only ones
	// that found the server unreachable, of a run that finished before
	// before.
	TasksToCancel(ctx context.Context, before time.Time) ([]*Task, error)
	// RunRequeueStaleTask is [Store.RunRequeueStale] for a run whose
	// lease lapsed during a call that became a task: it goes back to the
	// queue with its write fence stamped (the server, not the stamp,
	// settles it), and only if the call's task is not settled.
	RunRequeueStaleTask(ctx context.Context, id string, now time.Time) (bool, error)
}

// TaskTools is what [Tools] offer to reach the tasks of earlier calls —
// made by another segment, perhaps in a process that is gone. Package
// catalogue implements it over the MCP servers' sessions.
type TaskTools interface {
	// FollowTask waits for task t under ctx and returns the call's
	// result, as Call would have: completed is the tool's result, failed
	// a result with OutcomeError, cancelled one with OutcomeCancelled. A
	// task the server cannot account for is an error matching
	// ErrTaskUnknown. trace, if set, is told of the task's statuses.
	FollowTask(ctx context.Context, t *Task, trace *TaskTrace) (*ToolResult, error)
	// CancelTask sends tasks/cancel for task t, through the server's
	// egress and with its credential, and returns what the server said:
	// the outcome, and the task's state if the server gave one.
	CancelTask(ctx context.Context, t *Task) (TaskCancelOutcome, *TaskState, error)
}

// TaskTrace is a set of hooks through which a tool call reports that it
// became a task, on its context ([WithTaskTrace]), in the manner of
// net/http/httptrace. Any field may be nil.
type TaskTrace struct {
	// Created is told, on the calling goroutine and before the call waits
	// for the task, that the call became task t (Server, ID, Revision,
	// Status set). A non-nil error makes the tool cancel the task and fail
	// the call: the executor returns one when it could not persist the
	// handle.
	Created func(t *Task) error
	// Status is told of each status the task reports.
	Status func(st TaskState)
	// Cancelled is told, once, what the server said to the tasks/cancel
	// the call sent when its context ended. It may run after the call has
	// returned, on another goroutine.
	Cancelled func(outcome TaskCancelOutcome, st *TaskState)
	// Detach is asked, when the call's context ends during the task with
	// cause, whether to leave the task running on its server instead of
	// cancelling it: true when the process is shutting down or the
	// segment lost its lease, not when the run was cancelled or its
	// budget passed. The handle stays persisted and the fence stamped;
	// the worker that takes the run over follows the task.
	Detach func(cause error) bool
}

type taskTraceKey struct{}

// WithTaskTrace returns a context whose tool call reports its task to
// trace. The executor sets it on every call of a runtime whose store is a
// [TaskStore].
func WithTaskTrace(ctx context.Context, trace *TaskTrace) context.Context {
	return context.WithValue(ctx, taskTraceKey{}, trace)
}

// TaskTraceFrom returns the context's TaskTrace, or nil.
func TaskTraceFrom(ctx context.Context) *TaskTrace {
	t, _ := ctx.Value(taskTraceKey{}).(*TaskTrace)
	return t
}
