package catalogue

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/mcp"
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
	e := audit.Entry{Time: start, Action: audit.ActionToolCall, Purpose: "mcp tools/call", RunID: agent.RunIDFrom(ctx),
		Host: t.srv.cfg.Name, Path: t.callPath(ctx, args), OK: r.Outcome == agent.OutcomeOK, Reason: callReason(ctx, r), Duration: r.Took}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditBudget)
	defer cancel()
	if _, err := t.srv.cat.opts.Audit.Record(actx, e); err != nil {
		t.srv.logger.Warn("catalogue: auditing a tool call failed", "tool", t.name, "run", e.RunID, "error", err)
	}
}

// cancelOutcome is the call's mcp.CallOptions OnCancelOutcome: the
// outcome goes to Options.OnCancelOutcome and, with Audit, to its audit
// row, written aside (the hook must not block). Nil when neither is set.
func (t *Tool) cancelOutcome(ctx context.Context, args json.RawMessage) func(mcp.CancelOutcome) {
	opts := t.srv.cat.opts
	if opts.OnCancelOutcome == nil && opts.Audit == nil {
		return nil
	}
	server := t.srv.cfg.Name
	return func(o mcp.CancelOutcome) {
		if opts.OnCancelOutcome != nil {
			opts.OnCancelOutcome(server, o)
		}
		if opts.Audit == nil {
			return
		}
		e := audit.Entry{Time: time.Now(), Action: audit.ActionCancelOutcome, Purpose: "mcp tools/call", RunID: agent.RunIDFrom(ctx),
			Host: server, Path: t.callPath(ctx, args), OK: o != mcp.CancelCompletedAnyway, Reason: string(o)}
		t.srv.cat.goAside(func() {
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditBudget)
			defer cancel()
			if _, err := opts.Audit.Record(actx, e); err != nil {
				t.srv.logger.Warn("catalogue: auditing a cancel's outcome failed", "tool", t.name, "run", e.RunID, "error", err)
			}
		})
	}
}

// callPath names the call in its audit rows as an approval names it, or,
// for a call made outside a run's executor, by tool and arguments' digest.
func (t *Tool) callPath(ctx context.Context, args json.RawMessage) string {
	if ref, ok := agent.CallFrom(ctx); ok {
		return agent.DescribeCall(ref)
	}
	return t.name + " args=" + agent.ArgsDigest(args)
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
