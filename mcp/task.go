package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// TaskSupport says whether a tool may, or must, run as a task: a call whose
// work outlives its request, followed by task id (2025-11-25
// execution.taskSupport on the Tool).
type TaskSupport string

// The values of [Tool].TaskSupport.
const (
	// TaskForbidden: the tool never runs as a task. A tool that does not
	// say has this value.
	TaskForbidden TaskSupport = "forbidden"
	// TaskOptional: the tool runs as a task when the caller asks
	// ([CallOptions].Task).
	TaskOptional TaskSupport = "optional"
	// TaskRequired: the tool runs only as a task; [Client.CallTool] makes
	// it one without being asked.
	TaskRequired TaskSupport = "required"
)

// TaskStatus is where a task is in its life.
type TaskStatus string

// The statuses of a task. Completed, failed and cancelled are terminal: a
// task in one of them never changes again.
const (
	TaskWorking       TaskStatus = "working"
	TaskInputRequired TaskStatus = "input_required"
	TaskCompleted     TaskStatus = "completed"
	TaskFailed        TaskStatus = "failed"
	TaskCancelled     TaskStatus = "cancelled"
)

// Terminal reports whether s is a status a task never leaves.
func (s TaskStatus) Terminal() bool {
	return s == TaskCompleted || s == TaskFailed || s == TaskCancelled
}

// Task is the state of a task as the server last reported it.
//
// A task's id is a durable handle on work running on the server: it lives
// after the request that created it, and after the process that sent that
// request. To find it again a process needs three things: the server, the
// ID, and the protocol revision the task was created under
// ([Client.ProtocolVersion]: "2025-11-25" for the core tasks of that
// revision, "2026-07-28" for the io.modelcontextprotocol/tasks extension).
// A client connected to the same server under the same revision can then
// [Client.GetTask], [Client.CancelTask] or [Client.FollowTask] it.
//
// Task encodes to JSON (and decodes from it) in the wire shape of
// 2026-07-28 — taskId, status, statusMessage, createdAt, lastUpdatedAt,
// ttlMs, pollIntervalMs — and decodes the 2025-11-25 shape (ttl,
// pollInterval) as well, so it can be stored as it is.
type Task struct {
	ID            string
	Status        TaskStatus
	StatusMessage string
	CreatedAt     time.Time
	LastUpdatedAt time.Time
	// TTL is how long after CreatedAt the server may forget the task.
	// Zero means the server gave none (unlimited).
	TTL time.Duration
	// PollInterval is how often the server asks to be polled. Zero means
	// it gave none.
	PollInterval time.Duration
}

// ErrTaskNotFound reports a task id the server does not know: it never
// created the task, forgot it, or let it expire (its TTL passed). An error
// that matches it usually also carries the server's [*RPCError].
var ErrTaskNotFound = errors.New("mcp: task not found")

// ErrTaskTerminal reports a [Client.CancelTask] of a task that had already
// ended (completed, failed or cancelled): there was nothing to cancel. The
// Task returned with it is the task's final state, when the server would
// say.
var ErrTaskTerminal = errors.New("mcp: task already ended")

// TaskError reports a task that ended without a result: it failed, or it
// was cancelled (by someone else: a call whose own context was cancelled
// returns the usual error matching [ErrCancelled], not a TaskError). A task
// that ended cancelled matches [ErrCancelled] and [context.Canceled]. A
// tool that failed with a result (IsError set) is that result, not a
// TaskError.
type TaskError struct {
	ID      string
	Status  TaskStatus // TaskFailed or TaskCancelled
	Message string     // the server's statusMessage, if any
	// Err is the JSON-RPC error the task failed with (an *RPCError),
	// when the server gave one.
	Err error
}

// Error names the task and its status, then the server's status message
// and JSON-RPC error, where it gave them.
func (e *TaskError) Error() string {
	msg := fmt.Sprintf("mcp: task %s %s", e.ID, e.Status)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns Err, and for a cancelled task ErrCancelled and
// context.Canceled.
func (e *TaskError) Unwrap() []error {
	var errs []error
	if e.Status == TaskCancelled {
		errs = append(errs, ErrCancelled, context.Canceled)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// wireTask is a Task as either generation sends it: 2025-11-25 names the
// durations ttl and pollInterval, 2026-07-28 ttlMs and pollIntervalMs;
// both in milliseconds, ttl null for unlimited.
type wireTask struct {
	TaskID         string     `json:"taskId"`
	Status         TaskStatus `json:"status"`
	StatusMessage  string     `json:"statusMessage,omitempty"`
	CreatedAt      string     `json:"createdAt"`
	LastUpdatedAt  string     `json:"lastUpdatedAt"`
	TTL            *float64   `json:"ttl,omitempty"`
	TTLMs          *float64   `json:"ttlMs,omitempty"`
	PollInterval   *float64   `json:"pollInterval,omitempty"`
	PollIntervalMs *float64   `json:"pollIntervalMs,omitempty"`
}

// task converts the wire form. Malformed timestamps become the zero time:
// a server's clock format is no reason to lose the handle.
func (w *wireTask) task() Task {
	t := Task{ID: w.TaskID, Status: w.Status, StatusMessage: w.StatusMessage}
	t.CreatedAt, _ = time.Parse(time.RFC3339Nano, w.CreatedAt)
	t.LastUpdatedAt, _ = time.Parse(time.RFC3339Nano, w.LastUpdatedAt)
	t.TTL = millis(w.TTLMs, w.TTL)
	t.PollInterval = millis(w.PollIntervalMs, w.PollInterval)
	return t
}

// millis reads the first of the given millisecond counts that is set.
func millis(vs ...*float64) time.Duration {
	for _, v := range vs {
		if v != nil && *v > 0 && !math.IsInf(*v, 0) && *v < float64(math.MaxInt64/int64(time.Millisecond)) {
			return time.Duration(*v * float64(time.Millisecond))
		}
	}
	return 0
}

// MarshalJSON encodes t in the 2026-07-28 wire shape.
func (t Task) MarshalJSON() ([]byte, error) {
	w := wireTask{TaskID: t.ID, Status: t.Status, StatusMessage: t.StatusMessage}
	if !t.CreatedAt.IsZero() {
		w.CreatedAt = t.CreatedAt.UTC().Format(time.RFC3339Nano)
	}
	if !t.LastUpdatedAt.IsZero() {
		w.LastUpdatedAt = t.LastUpdatedAt.UTC().Format(time.RFC3339Nano)
	}
	if t.TTL > 0 {
		ms := float64(t.TTL.Milliseconds())
		w.TTLMs = &ms
	}
	if t.PollInterval > 0 {
		ms := float64(t.PollInterval.Milliseconds())
		w.PollIntervalMs = &ms
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes a Task from either generation's wire shape.
func (t *Task) UnmarshalJSON(data []byte) error {
	var w wireTask
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*t = w.task()
	return nil
}
