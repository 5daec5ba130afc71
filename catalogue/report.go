package catalogue

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/audit"
)

// CallReport is what [Options].OnCall is told of one call of a tool.
type CallReport struct {
	// Server is the name of the tool's server; Tool is the tool's local
	// name (mcp_<server>_<tool>).
	Server, Tool string
	// Outcome is the outcome of the call's result, or [agent.OutcomeFailed]
	// when the call returned an error.
	Outcome agent.Outcome
	// TimedOut says that the call failed because a deadline passed (the
	// caller's, or the tool's budget); Outcome is then
	// [agent.OutcomeFailed].
	TimedOut bool
	// Took runs from the call to its return: a reconnection, the
	// handshake and the wait for the server included.
	Took time.Duration
}

// reported is Call, told to OnCall and recorded in the audit log.
func (t *Tool) reported(ctx context.Context, args json.RawMessage) (*agent.ToolResult, error) {
	start := time.Now()
	res, err := t.call(ctx, args)
	r := CallReport{Server: t.srv.cfg.Name, Tool: t.name, Outcome: agent.OutcomeFailed, Took: time.Since(start)}
	if err == nil {
		r.Outcome = res.Outcome
		r.TimedOut = t.timedOut(res) || res.Outcome == agent.OutcomeFailed && ctx.Err() != nil
	}
	if t.srv.cat.opts.OnCall != nil {
		t.srv.cat.opts.OnCall(r)
	}
	if t.srv.cat.opts.Audit != nil {
		t.audit(ctx, args, start, r)
	}
	return res, err
}

// auditBudget bounds the writing of a call's audit row, which outlives a
// cancelled call's context.
const auditBudget = 10 * time.Second

// audit records the call's audit row (audit.ActionToolCall).
func (t *Tool) audit(ctx context.Context, args json.RawMessage, start time.Time, r CallReport) {
	ref, ok := agent.CallFrom(ctx)
	if !ok { // a call made outside a run's executor: named by tool and arguments
		ref = agent.CallRef{Tool: t.name, ArgsDigest: agent.ArgsDigest(args)}
	}
	path := agent.DescribeCall(ref)
	if !ok {
		path = t.name + " args=" + ref.ArgsDigest
	}
	e := audit.Entry{Time: start, Action: audit.ActionToolCall, Purpose: "mcp tools/call", RunID: agent.RunIDFrom(ctx),
		Host: t.srv.cfg.Name, Path: path, OK: r.Outcome == agent.OutcomeOK, Reason: callReason(ctx, r), Duration: r.Took}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditBudget)
	defer cancel()
	if _, err := t.srv.cat.opts.Audit.Record(actx, e); err != nil {
		t.srv.logger.Warn("catalogue: auditing a tool call failed", "tool", t.name, "run", e.RunID, "error", err)
	}
}

// callReason is a tool call's audit reason: a fixed literal (see
// audit.ActionToolCall), never text the server or the model chose.
func callReason(ctx context.Context, r CallReport) string {
	cause := context.Cause(ctx)
	switch {
	case r.Outcome == agent.OutcomeOK:
		return "ok"
	case r.Outcome == agent.OutcomeError:
		return "tool error"
	case r.Outcome == agent.OutcomeCancelled && errors.Is(cause, agent.ErrRunCancelled):
		return "cancelled: run cancelled"
	case r.Outcome == agent.OutcomeCancelled && errors.Is(cause, agent.ErrLeaseLost):
		return "cancelled: lease lost"
	case r.Outcome == agent.OutcomeCancelled:
		return "cancelled: caller"
	case r.TimedOut && errors.Is(cause, agent.ErrRunDeadline):
		return "timed out: run deadline"
	case r.TimedOut && ctx.Err() != nil:
		return "timed out: caller's deadline"
	case r.TimedOut:
		return "timed out: budget"
	}
	return "failed"
}
