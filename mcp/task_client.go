package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
)

// taskMetadata is params.task of a task-augmented request (2025-11-25).
type taskMetadata struct {
	TTL *int64 `json:"ttl,omitempty"` // milliseconds
}

// taskIDParams are the params of tasks/get, tasks/result and tasks/cancel.
type taskIDParams struct {
	paramsBase
	TaskID string `json:"taskId"`
}

// taskUpdateParams are the params of tasks/update (2026-07-28).
type taskUpdateParams struct {
	paramsBase
	TaskID string `json:"taskId"`
	// Responses are sent whole: the embedded InputResponses is for the
	// retries of a multi-round-trip request.
	Responses map[string]json.RawMessage `json:"inputResponses"`
}

// taskResult marks a result that may be a task (resultType "task").
type taskResult interface {
	acceptsTask()
}

// detailedTask is a task's state as tasks/get (and a status notification)
// gives it: the Task, and on 2026-07-28 the fields its status carries —
// the input it waits for, its result, or its error. The input requests
// travel in resultKind (the same inputRequests field).
type detailedTask struct {
	resultKind
	wireTask
	Result json.RawMessage `json:"result"`
	Error  *RPCError       `json:"error"`
}

func (d *detailedTask) UnmarshalJSON(data []byte) error {
	if err := json.Unmarshal(data, &d.resultKind); err != nil {
		return err
	}
	if err := json.Unmarshal(data, &d.wireTask); err != nil {
		return err
	}
	var rest struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int64           `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data, &rest); err != nil {
		return err
	}
	d.Result = rest.Result
	if e := rest.Error; e != nil {
		d.Error = &RPCError{Code: e.Code, Message: e.Message, Data: e.Data}
	}
	return nil
}

// taskMethod checks that method exists in the negotiated revision.
func (c *Client) taskMethod(method string) error {
	var ok bool
	switch c.taskRevision() {
	case tasksCore:
		ok = method != "tasks/update"
	case tasksExtension:
		ok = method != "tasks/result" && method != "tasks/list"
	}
	if !ok {
		return fmt.Errorf("mcp: %s does not exist in revision %s: %w", method, c.rev.name, errors.ErrUnsupported)
	}
	return nil
}

// taskRequest sends a task method for task id: quiet, never cancelled by
// notification, with the usual budgets of opts.
func (c *Client) taskRequest(ctx context.Context, method string, params requestParams, id string, opts *CallOptions, out result) error {
	if err := c.taskMethod(method); err != nil {
		return err
	}
	var o CallOptions
	if opts != nil {
		o = *opts
	}
	o.quiet = true
	o.OnProgress, o.ResetTimeoutOnProgress = nil, false
	err := c.request(ctx, method, params, &o, false, out)
	var rpcErr *RPCError
	if errors.As(err, &rpcErr) && rpcErr.Code == CodeInvalidParams {
		return fmt.Errorf("mcp: %s %q: %w: %w", method, id, ErrTaskNotFound, err)
	}
	return err
}

// getTask sends tasks/get.
func (c *Client) getTask(ctx context.Context, id string, opts *CallOptions) (*detailedTask, error) {
	var res detailedTask
	if err := c.taskRequest(ctx, "tasks/get", &taskIDParams{TaskID: id}, id, opts, &res); err != nil {
		return nil, err
	}
	if res.TaskID == "" || res.Status == "" {
		return nil, &ProtocolError{Reason: fmt.Sprintf("tasks/get %q: a result without taskId or status", id)}
	}
	if res.TaskID != id {
		return nil, &ProtocolError{Reason: fmt.Sprintf("tasks/get %q: the server answered for task %q", id, res.TaskID)}
	}
	return &res, nil
}

// GetTask asks the server for the state of task id (tasks/get), with the
// budgets and cancellation of any request; a task method is never
// cancelled by notification, only abandoned. A task the server does not
// know is an error matching [ErrTaskNotFound]. On a revision without tasks
// it returns an error matching [errors.ErrUnsupported] and sends nothing.
func (c *Client) GetTask(ctx context.Context, id string, opts *CallOptions) (*Task, error) {
	d, err := c.getTask(ctx, id, opts)
	if err != nil {
		return nil, err
	}
	t := d.task()
	return &t, nil
}

// CancelTask asks the server to cancel task id (tasks/cancel), which is
// how a task is stopped: it lives on after the request that created it,
// so cancelling that request would not stop it. Any process connected to
// the server under the task's revision may cancel it.
//
// The Task returned is the server's answer: on 2025-11-25 the task, which
// the server has moved to cancelled; on 2026-07-28 an acknowledgement only
// (cancellation is cooperative there, and the task may still end
// otherwise), so the Task has just its ID. A task that had already ended
// returns an error matching [ErrTaskTerminal] with the task's final state
// (2025-11-25 answers such a cancel with -32602, which the client tells
// apart from an unknown id with a tasks/get); a task the server does not
// know, [ErrTaskNotFound].
func (c *Client) CancelTask(ctx context.Context, id string, opts *CallOptions) (*Task, error) {
	var res detailedTask
	err := c.taskRequest(ctx, "tasks/cancel", &taskIDParams{TaskID: id}, id, opts, &res)
	switch {
	case errors.Is(err, ErrTaskNotFound) && c.taskRevision() == tasksCore:
		// -32602: unknown, or already terminal. The server can say which.
		d, getErr := c.getTask(ctx, id, opts)
		if getErr != nil || !d.Status.Terminal() {
			return nil, err
		}
		t := d.task()
		return &t, fmt.Errorf("mcp: tasks/cancel %q: %w (%s)", id, ErrTaskTerminal, t.Status)
	case err != nil:
		return nil, err
	}
	if res.TaskID == "" {
		return &Task{ID: id}, nil
	}
	t := res.task()
	return &t, nil
}

// ListTasks lists the tasks the server knows for this client (tasks/list,
// 2025-11-25 only), page by page as the caller ranges. On another revision
// it yields one error matching [errors.ErrUnsupported] and sends nothing.
func (c *Client) ListTasks(ctx context.Context, opts *CallOptions) iter.Seq2[Task, error] {
	if err := c.taskMethod("tasks/list"); err != nil {
		return func(yield func(Task, error) bool) { yield(Task{}, err) }
	}
	var o CallOptions
	if opts != nil {
		o = *opts
	}
	o.quiet = true
	return pages[Task](c, ctx, "tasks/list", "tasks", &o)
}

// FollowTask follows task id, which this or another process created, to
// its end, exactly as [Client.CallTool] follows a task it created: it takes
// status notifications and polls tasks/get at the task's PollInterval;
// answers input_required through the client's handlers (ElicitationHandler,
// SamplingHandler, Roots); and returns the result — from tasks/result on
// 2025-11-25, from the terminal tasks/get on 2026-07-28. The task must be
// followed under the revision it was created under (a persisted handle is
// server, id and [Client.ProtocolVersion]).
//
// ctx and opts bound the whole task as they bound a call. When ctx is
// cancelled or a deadline passes, the task is cancelled with tasks/cancel
// (once, off the caller's path, bounded, logged at warn level if it fails;
// never notifications/cancelled; opts.OnTaskCancel is told the answer)
// and FollowTask returns an error matching ErrCancelled or ErrTimeout —
// unless opts.DetachTask leaves the task running. A task that ended failed returns a
// [*TaskError] (or the tool's result, if it failed with IsError set), one
// that ended cancelled a *TaskError matching ErrCancelled, and one the
// server does not know an error matching [ErrTaskNotFound].
// [Client.Close] does not cancel a task being followed: the task is a
// durable handle, which another client can follow on.
func (c *Client) FollowTask(ctx context.Context, id string, opts *CallOptions) (*CallToolResult, error) {
	if ctx.Err() != nil {
		return nil, interruption("tasks/get", ctx)
	}
	if err := c.taskMethod("tasks/get"); err != nil {
		return nil, err
	}
	f, err := c.newFollower(ctx, opts, "")
	if err != nil {
		return nil, err
	}
	defer f.stop()
	w := c.watchTask(id)
	defer c.unwatchTask(id, w)
	d, err := c.getTask(f.budget, id, f.pollOptions())
	if err != nil {
		if f.budget.Err() != nil {
			return nil, f.interrupted(id)
		}
		return nil, err
	}
	f.report(d.task())
	return f.follow(w, d)
}
