package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/andonhq/andon/model"
)

// argLimits are the limits on a model's tool call's arguments: depth
// first, then size. Arguments over one are not stored: a refusal that
// names the limit, a JSON string, stands in for them (see boundCalls), so
// the step stays bounded and a run rebuilt from its steps refuses the call
// again.
func argLimits() [2]*LimitError {
	return [2]*LimitError{
		tooDeep("its arguments"),
		{What: "its arguments", Limit: "agent.MaxArgumentsBytes", Max: MaxArgumentsBytes},
	}
}

// refusal is what stands in for arguments over limit.
func refusal(limit *LimitError) json.RawMessage {
	data, _ := json.Marshal("andon refused the call: " + limit.Error())
	return data
}

// boundCalls returns a model's tool calls as they are stored and played:
// each call's arguments compact JSON (text that is not JSON becomes a
// JSON string of it, for the tool to refuse, as model/openai does), and
// arguments nested deeper than MaxJSONDepth or larger than
// MaxArgumentsBytes replaced by a refusal that names the limit: such a
// call is never made (callOrRefuse), and the model is told why.
func boundCalls(calls []model.ToolCall) []model.ToolCall {
	if len(calls) == 0 {
		return calls
	}
	out := make([]model.ToolCall, len(calls))
	for i, c := range calls {
		out[i] = c
		if len(c.Arguments) == 0 {
			continue
		}
		if deeperThan(c.Arguments, MaxJSONDepth) {
			out[i].Arguments = refusal(argLimits()[0])
			continue
		}
		var b bytes.Buffer
		if json.Compact(&b, c.Arguments) == nil {
			out[i].Arguments = b.Bytes()
		} else {
			out[i].Arguments, _ = json.Marshal(string(c.Arguments))
		}
		if len(out[i].Arguments) > MaxArgumentsBytes {
			out[i].Arguments = refusal(argLimits()[1])
		}
	}
	return out
}

// refused returns the limit whose refusal stands in for call's
// arguments, if one does.
func refused(call model.ToolCall) (*LimitError, bool) {
	if len(call.Arguments) == 0 || call.Arguments[0] != '"' {
		return nil, false // arguments a model gave: an object, mostly
	}
	for _, limit := range argLimits() {
		if bytes.Equal(call.Arguments, refusal(limit)) {
			return limit, true
		}
	}
	return nil, false
}

// callOrRefuse makes the first pending call (toolCall), unless its
// arguments were over a limit: then it is not made, and its step, failed,
// tells the model which limit.
func (s *segment) callOrRefuse(ctx context.Context, call model.ToolCall, pending *PendingCall) error {
	if limit, ok := refused(call); ok {
		return s.recordCall(ctx, call, OutcomeFailed, fmt.Sprintf("The call to tool %q was not made: %v.", call.Name, limit), 0, false)
	}
	return s.toolCall(ctx, call, pending)
}
