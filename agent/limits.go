package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Limits on the JSON that operators and models hand the runtime. Each is
// checked before anything is stored, so that what is stored, and served,
// stays bounded: a value nested thousands deep costs little to send and,
// re-indented on the way out, a great deal to read.
const (
	// MaxJSONDepth bounds how deeply a JSON value handed to the runtime
	// nests, counted from its own root (an object or array is one level):
	// a run request with its script ([Runtime.Submit]), a model's tool
	// call's arguments, an operator's answer ([Runtime.Reply]). A
	// script's arguments sit 6 levels inside its run request
	// (request, script, steps, step, tool_calls, call).
	MaxJSONDepth = 64
	// MaxRequestBytes bounds a run request as stored: its prompt, model
	// and script, as compact JSON.
	MaxRequestBytes = 1 << 20
	// MaxArgumentsBytes bounds one tool call's arguments, as a model gave
	// them, compacted. It is the size of a tool's result that a model
	// reads back (catalogue.DefaultMaxResultBytes) and of a step's text.
	MaxArgumentsBytes = 64 << 10
	// MaxAnswerBytes bounds an operator's answer to a server's question.
	MaxAnswerBytes = 64 << 10
)

// ErrLimit reports JSON over one of the limits above; the error is a
// [*LimitError], which names the limit.
var ErrLimit = errors.New("agent: over a limit")

// LimitError is a JSON value over a limit: what it was, and which limit.
// Its message names the limit ("the run request: nested deeper than 64
// levels (agent.MaxJSONDepth)"), for the client or the model to act on.
type LimitError struct {
	What  string // "the run request", "the arguments", "the answer"
	Limit string // the limit's name, such as "agent.MaxJSONDepth"
	Max   int    // its value
	Depth bool   // a depth limit; otherwise a size in bytes
}

// Error names what went over which limit, and the limit's name.
func (e *LimitError) Error() string {
	if e.Depth {
		return fmt.Sprintf("%s: nested deeper than %d levels (%s)", e.What, e.Max, e.Limit)
	}
	return fmt.Sprintf("%s: larger than %d bytes (%s)", e.What, e.Max, e.Limit)
}

// Is makes errors.Is(err, ErrLimit) true.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

func tooDeep(what string) *LimitError {
	return &LimitError{What: what, Limit: "agent.MaxJSONDepth", Max: MaxJSONDepth, Depth: true}
}

// deeperThan reports whether data nests deeper than max levels. It counts
// the brackets outside strings, so it answers for any bytes, valid JSON or
// not, in one pass, and stops at the first level too deep.
func deeperThan(data []byte, max int) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range data {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString:
			inString = c != '"'
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > max {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}

// requestJSON is req as the store keeps it: compact JSON, within
// MaxJSONDepth and MaxRequestBytes.
func requestJSON(req *Request) (json.RawMessage, error) {
	const what = "the run request"
	// The script is the only part that nests, one level inside the
	// request; checked before encoding, which would follow it all the way.
	if deeperThan(req.Script, MaxJSONDepth-1) {
		return nil, tooDeep(what)
	}
	raw, err := json.Marshal(req) // compacts the script
	if err != nil {
		return nil, fmt.Errorf("agent: encoding the request: %w", err)
	}
	if len(raw) > MaxRequestBytes {
		return nil, &LimitError{What: what, Limit: "agent.MaxRequestBytes", Max: MaxRequestBytes}
	}
	return raw, nil
}

// answerJSON is an operator's answer as the store keeps it: compact, within
// MaxJSONDepth and MaxAnswerBytes. Content that is not JSON is returned as
// it is, for the schema's check to refuse.
func answerJSON(content json.RawMessage) (json.RawMessage, error) {
	const what = "the answer"
	if deeperThan(content, MaxJSONDepth) {
		return nil, tooDeep(what)
	}
	var b bytes.Buffer
	if json.Compact(&b, content) != nil {
		return content, nil
	}
	if b.Len() > MaxAnswerBytes {
		return nil, &LimitError{What: what, Limit: "agent.MaxAnswerBytes", Max: MaxAnswerBytes}
	}
	return b.Bytes(), nil
}
