package catalogue

import (
	"context"
	"encoding/json"
	"time"

	"github.com/andonhq/andon/agent"
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

// reported is Call, told to OnCall.
func (t *Tool) reported(ctx context.Context, args json.RawMessage) (*agent.ToolResult, error) {
	start := time.Now()
	res, err := t.call(ctx, args)
	r := CallReport{Server: t.srv.cfg.Name, Tool: t.name, Outcome: agent.OutcomeFailed, Took: time.Since(start)}
	if err == nil {
		r.Outcome = res.Outcome
		// call returns a failed result without an error for a timeout
		// alone (see failure); every other failure is an error.
		r.TimedOut = res.Outcome == agent.OutcomeFailed
	}
	t.srv.cat.opts.OnCall(r)
	return res, err
}
