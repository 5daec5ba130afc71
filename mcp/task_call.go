package mcp

import (
	"context"
	"fmt"
)

// callToolResponse is a tools/call result that may be a task: a
// CreateTaskResult (2025-11-25, the task in "task"; 2026-07-28, the task
// inline with resultType "task") or a CallToolResult.
type callToolResponse struct {
	resultKind
	CallToolResult
	wireTask
	Task *wireTask `json:"task"`
}

func (*callToolResponse) acceptsTask() {}

// callToolTask is CallTool on a session with tasks: the call runs as a task
// when the tool requires it or the caller asks (2025-11-25), or when the
// server makes it one (2026-07-28), and is followed to its end.
func (c *Client) callToolTask(ctx context.Context, params *callToolParams, opts *CallOptions, gen taskGeneration) (*CallToolResult, error) {
	var o CallOptions
	if opts != nil {
		o = *opts
	}
	if gen == tasksCore {
		support, listed := c.toolTaskSupport(params.Name)
		if !listed {
			// Whether the tool must run as a task is in its listing.
			_, err := c.ListTools(ctx, &CallOptions{Timeout: o.Timeout})
			switch {
			case err != nil && ctx.Err() != nil:
				return nil, interruption("tools/call", ctx)
			case err == nil:
				// The listing is whole: a tool not in it is not
				// looked up again (a later ListTools learns it).
				c.tasks.mu.Lock()
				c.tasks.listed = true
				c.tasks.mu.Unlock()
			}
			support, _ = c.toolTaskSupport(params.Name)
		}
		if support != TaskRequired && (support != TaskOptional || !o.Task) {
			o.OnTaskCreated, o.OnTaskStatus, o.OnTaskCancel, o.DetachTask = nil, nil, nil, nil
			return c.callToolPlain(ctx, params, &o)
		}
		params.Task = &taskMetadata{}
		if o.TaskTTL > 0 {
			ms := o.TaskTTL.Milliseconds()
			params.Task.TTL = &ms
		}
	}
	f, err := c.newFollower(ctx, &o, "tools/call")
	if err != nil {
		return nil, err
	}
	defer f.stop()
	token := ""
	if gen == tasksCore && f.wantsProgress() {
		token = c.newProgressToken()
		o.progressToken = token
		user := o.OnProgress
		o.OnProgress = func(p Progress) {
			if user != nil {
				user(p)
			}
			f.progressed()
		}
	}
	o.onLateReply = c.cancelLateTask(gen, params.Name)
	var res callToolResponse
	err = c.request(ctx, "tools/call", params, &o, false, &res)
	if token != "" {
		f.adoptProgress(token) // the token lives as long as the task
	}
	if err != nil {
		return nil, err
	}
	var created *wireTask
	switch {
	case gen == tasksCore && res.Task != nil:
		created = res.Task
	case gen == tasksExtension && res.ResultType == "task":
		created = &res.wireTask
	}
	if created == nil { // the server answered at once
		if res.Content == nil {
			res.Content = []Content{}
		}
		return &res.CallToolResult, nil
	}
	if created.TaskID == "" || created.Status == "" {
		return nil, &ProtocolError{Reason: "tools/call: a task without taskId or status"}
	}
	d := &detailedTask{wireTask: *created}
	t := d.task()
	w := c.watchTask(t.ID)
	defer c.unwatchTask(t.ID, w)
	f.last, f.reported = t, true
	if o.OnTaskCreated != nil {
		if err := o.OnTaskCreated(t); err != nil {
			c.cancelTaskBackground(ctx, t.ID, o.OnTaskCancel)
			return nil, fmt.Errorf("mcp: task %s of tool %q: OnTaskCreated: %w", t.ID, params.Name, err)
		}
	}
	return f.follow(w, d)
}

// callToolPlain is a tools/call that does not become a task.
func (c *Client) callToolPlain(ctx context.Context, params *callToolParams, opts *CallOptions) (*CallToolResult, error) {
	var res struct {
		resultKind
		CallToolResult
	}
	if err := c.request(ctx, "tools/call", params, opts, false, &res); err != nil {
		return nil, err
	}
	if res.Content == nil {
		res.Content = []Content{}
	}
	return &res.CallToolResult, nil
}
