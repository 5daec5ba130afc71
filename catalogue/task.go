package catalogue

import (
	"context"
	"errors"
	"fmt"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/egress"
	"github.com/andonhq/andon/mcp"
)

// MCP tasks: a tool call the server runs as a task is reported to the
// runtime through the [agent.TaskTrace] on the call's context, and the
// catalogue reaches the tasks of earlier calls — started by another
// segment, perhaps in a process that is gone — by server, id and revision
// ([agent.TaskTools]).

var _ agent.TaskTools = (*Catalogue)(nil)

// taskOptions fills in opts the task hooks of a call made on cl, when the
// runtime traces the call's task: the handle (server, id, the session's
// revision) is reported before the call waits for the task, and each
// status after. A tool that may run as a task runs as one then: a task is
// a handle that outlives the process.
func (t *Tool) taskOptions(ctx context.Context, cl *mcp.Client, opts *mcp.CallOptions) {
	trace := agent.TaskTraceFrom(ctx)
	if trace == nil {
		return
	}
	opts.Task = t.remote.TaskSupport == mcp.TaskOptional
	if trace.Created != nil {
		opts.OnTaskCreated = func(mt mcp.Task) error {
			return trace.Created(&agent.Task{Server: t.srv.cfg.Name, ID: mt.ID, Revision: cl.ProtocolVersion(),
				Status: taskStatus(mt.Status), StatusMessage: mt.StatusMessage, CreatedAt: mt.CreatedAt, UpdatedAt: mt.LastUpdatedAt})
		}
	}
	if trace.Status != nil {
		opts.OnTaskStatus = func(mt mcp.Task) {
			trace.Status(agent.TaskState{Status: taskStatus(mt.Status), Message: mt.StatusMessage})
		}
	}
	traceCancel(trace, opts)
}

// traceCancel fills in opts the hooks by which the tasks/cancel a call
// sends itself, and a shutdown that leaves its task running, reach trace.
func traceCancel(trace *agent.TaskTrace, opts *mcp.CallOptions) {
	if trace.Cancelled != nil {
		opts.OnTaskCancel = func(mt mcp.Task, err error) {
			outcome, st := cancelOutcome(&mt, err)
			trace.Cancelled(outcome, st)
		}
	}
	opts.DetachTask = trace.Detach
}

// cancelOutcome is what the server said to a tasks/cancel, in the
// runtime's terms: acknowledged; rejected (the task had ended, or the
// server does not know it); or unreachable (no answer).
func cancelOutcome(mt *mcp.Task, err error) (agent.TaskCancelOutcome, *agent.TaskState) {
	var st *agent.TaskState
	if mt != nil && mt.Status != "" {
		st = &agent.TaskState{Status: taskStatus(mt.Status), Message: mt.StatusMessage}
	}
	switch {
	case err == nil:
		return agent.TaskCancelAcknowledged, st
	case errors.Is(err, mcp.ErrTaskTerminal):
		return agent.TaskCancelRejected, st
	case errors.Is(err, mcp.ErrTaskNotFound):
		return agent.TaskCancelRejected, &agent.TaskState{Status: agent.TaskUnknown}
	}
	return agent.TaskCancelUnreachable, nil
}

// taskStatus is an MCP task status in the runtime's terms.
func taskStatus(s mcp.TaskStatus) agent.TaskStatus {
	switch s {
	case mcp.TaskWorking, mcp.TaskInputRequired, mcp.TaskCompleted, mcp.TaskFailed, mcp.TaskCancelled:
		return agent.TaskStatus(s)
	}
	return agent.TaskWorking // a status of a later revision: not over, as far as andon knows
}

// FollowTask implements [agent.TaskTools]: it follows task tk on its
// server, under the revision it was created under, within the budget of
// its tool (as a call of it would be), and returns the call's result. A
// task the server does not know, a server that cannot be reached, or one
// now speaking another revision, is an error matching
// [agent.ErrTaskUnknown]: nobody can say what became of the task.
func (c *Catalogue) FollowTask(ctx context.Context, tk *agent.Task, trace *agent.TaskTrace) (*agent.ToolResult, error) {
	t, err := c.Lookup(ctx, tk.Tool)
	if err != nil || t == nil || t.srv.cfg.Name != tk.Server || t.unavailable != nil {
		return nil, fmt.Errorf("catalogue: following task %q of tool %q: %w (the tool is not on server %q now)", tk.ID, tk.Tool, agent.ErrTaskUnknown, tk.Server)
	}
	b := t.budget
	bctx, cancel := withBudget(ctx, b, t.srv.cfg.Name, t.remote.Name)
	defer cancel()
	cn, err := t.srv.client(bctx, b, t.remote.Name)
	if err != nil {
		if ctx.Err() != nil {
			return t.failure(ctx, err)
		}
		return nil, fmt.Errorf("catalogue: following task %q on server %q: %w: %w", tk.ID, tk.Server, agent.ErrTaskUnknown, err)
	}
	if rev := cn.client.ProtocolVersion(); rev != tk.Revision {
		return nil, fmt.Errorf("catalogue: following task %q on server %q: %w: it was created under %s, the server speaks %s now",
			tk.ID, tk.Server, agent.ErrTaskUnknown, tk.Revision, rev)
	}
	opts := &mcp.CallOptions{Timeout: b.Timeout, ResetTimeoutOnProgress: *b.ProgressResetsTimeout, MaxTotalTimeout: b.MaxTimeout}
	if trace != nil && trace.Status != nil {
		opts.OnTaskStatus = func(mt mcp.Task) {
			trace.Status(agent.TaskState{Status: taskStatus(mt.Status), Message: mt.StatusMessage})
		}
	}
	if trace != nil {
		traceCancel(trace, opts)
	}
	if tk.RunID != "" {
		bctx = egress.WithRun(bctx, tk.RunID)
	}
	res, err := cn.client.FollowTask(bctx, tk.ID, opts)
	if err != nil {
		return t.taskFailure(ctx, bctx, cn, tk, err)
	}
	return t.result(ctx, res), nil
}

// taskFailure turns an error of following a task into the call's outcome:
// the server said the task failed or was cancelled (a result: the server
// accounted for it); the server does not know it, or the connection broke
// (ErrTaskUnknown); or the caller's interruption (as any call's).
func (t *Tool) taskFailure(ctx, bctx context.Context, cn *conn, tk *agent.Task, err error) (*agent.ToolResult, error) {
	if tk == nil {
		tk = &agent.Task{Server: t.srv.cfg.Name}
	}
	var te *mcp.TaskError
	switch {
	case ctx.Err() == nil && errors.As(err, &te) && te.Status == mcp.TaskCancelled:
		return &agent.ToolResult{Outcome: agent.OutcomeCancelled,
			Text: fmt.Sprintf("The task of tool %q on server %q was cancelled on the server.", t.remote.Name, t.srv.cfg.Name)}, nil
	case ctx.Err() == nil && errors.As(err, &te):
		text := fmt.Sprintf("The task of tool %q on server %q failed.", t.remote.Name, t.srv.cfg.Name)
		if te.Message != "" {
			text = fmt.Sprintf("The task of tool %q on server %q failed: %s", t.remote.Name, t.srv.cfg.Name, te.Message)
		}
		return &agent.ToolResult{Outcome: agent.OutcomeError, Text: truncate(text, t.srv.cat.opts.MaxResultBytes)}, nil
	case errors.Is(err, mcp.ErrTaskNotFound):
		return nil, fmt.Errorf("catalogue: following task %q on server %q: %w: %w", tk.ID, tk.Server, agent.ErrTaskUnknown, err)
	case ctx.Err() == nil && errors.Is(err, mcp.ErrClosed):
		t.srv.drop(cn)
		return nil, fmt.Errorf("catalogue: following task %q on server %q: %w: %w", tk.ID, tk.Server, agent.ErrTaskUnknown, err)
	}
	return t.failure(ctx, t.budgetPassed(ctx, bctx, &legError{leg: "tasks/get", err: err}))
}

// result is a tool result as the model reads it. The whole MCP result
// goes to the call's sink, if ctx has one ([WithCallResult]).
func (t *Tool) result(ctx context.Context, res *mcp.CallToolResult) *agent.ToolResult {
	if sink, ok := ctx.Value(resultKey{}).(*resultSink); ok {
		sink.set(res)
	}
	outcome := agent.OutcomeOK
	if res.IsError {
		outcome = agent.OutcomeError
	}
	return &agent.ToolResult{Outcome: outcome, Text: truncate(ResultText(res), t.srv.cat.opts.MaxResultBytes)}
}

// CancelTask implements [agent.TaskTools]: tasks/cancel for task tk on its
// server, over the server's transport (through egress, with its
// credential, for a server over HTTP), under ctx. A task that had ended
// already, or that the server does not know, is a rejected cancel; no
// answer (no connection, a timeout) is unreachable.
func (c *Catalogue) CancelTask(ctx context.Context, tk *agent.Task) (agent.TaskCancelOutcome, *agent.TaskState, error) {
	var s *server
	for _, cand := range c.servers {
		if cand.cfg.Name == tk.Server {
			s = cand
		}
	}
	if s == nil || c.closed.Load() {
		return agent.TaskCancelUnreachable, nil, fmt.Errorf("catalogue: cancelling task %q: no server %q", tk.ID, tk.Server)
	}
	// What the cancel sends out over HTTP is audited under its run.
	ctx = egress.WithRun(ctx, tk.RunID)
	b := s.cfg.ToolBudget("")
	cn, err := s.client(ctx, b, "tasks/cancel")
	if err != nil {
		return agent.TaskCancelUnreachable, nil, fmt.Errorf("catalogue: cancelling task %q on server %q: %w", tk.ID, tk.Server, err)
	}
	mt, err := cn.client.CancelTask(ctx, tk.ID, &mcp.CallOptions{Timeout: b.Timeout})
	outcome, st := cancelOutcome(mt, err)
	switch outcome {
	case agent.TaskCancelAcknowledged:
		return outcome, st, nil
	case agent.TaskCancelRejected:
		return outcome, st, err
	}
	if errors.Is(err, mcp.ErrClosed) {
		s.drop(cn)
	}
	return agent.TaskCancelUnreachable, nil, fmt.Errorf("catalogue: cancelling task %q on server %q: %w", tk.ID, tk.Server, err)
}
