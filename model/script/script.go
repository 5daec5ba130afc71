// Package script is a deterministic, offline [model.Model] driven by a
// script: a list of steps, each either tool calls or a final answer. It
// needs no network and no key, so the demo and the tests of the runtime run
// anywhere and always do the same thing.
//
// A script is JSON or YAML. In YAML:
//
//	steps:
//	  - tool_calls:
//	      - name: mcp_demo_echo
//	        arguments: {text: hello}
//	  - text: I will now wait for a slow tool.
//	    tool_calls:
//	      - name: mcp_demo_slow
//	        arguments: {ms: 30000}
//	    wait_ms: 200      # the model takes 200ms to answer
//	  - text: All done.   # no tool calls: the final answer
//
// The document may also be the list of steps itself, without "steps:".
// Unknown fields are errors, so a misspelt field never goes unnoticed.
//
// # Which step comes next
//
// The model keeps no state. The k-th call of Complete (counting from one) is
// answered with step k, where k-1 is the number of assistant messages already
// in the conversation: a run resumed from its recorded steps, by another
// worker or after an approval, goes on where it left off. Tool call ids are
// deterministic: "call_<step>_<index>", both counted from one, unless the
// script gives a call its own id (as providers do, reusing them). Past the
// last step, the model answers with a final text that says the script is
// over.
package script

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/andonhq/andon/model"
)

// Script is a parsed script. [json.Marshal] of a Script is its canonical
// JSON form, which [Parse] reads back: use it to store a script written in
// YAML where JSON is expected (such as agent.Request.Script).
type Script struct {
	Steps []Step `json:"steps"`
}

// Step is one model turn: tool calls, a final answer, or tool calls with
// some text alongside them.
type Step struct {
	// Text is what the model says. A step without tool calls is the final
	// answer, and its text must not be empty.
	Text string `json:"text,omitempty"`
	// ToolCalls are the tools the model asks to call, in order.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// WaitMS makes the model take this many milliseconds to answer, to
	// model a slow model. The wait honours cancellation.
	WaitMS int64 `json:"wait_ms,omitempty"`
}

// ToolCall is a call the script asks for.
type ToolCall struct {
	// Name is the tool's name as the model sees it, such as
	// "mcp_demo_echo".
	Name string `json:"name"`
	// Arguments must be a JSON object. Absent means {}.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// ID is the id the model gives the call. Absent means
	// "call_<step>_<index>" (see [CallID]). Set it to play a provider
	// that numbers calls per response and so reuses ids ("call_0").
	ID string `json:"id,omitempty"`
}

// Parse reads a script from JSON or YAML and validates it. A document that
// is valid JSON is read as JSON (its arguments are kept byte for byte, only
// compacted); anything else is read as YAML.
func Parse(data []byte) (*Script, error) {
	if !json.Valid(data) {
		j, err := yamlToJSON(data)
		if err != nil {
			return nil, fmt.Errorf("script: %w", err)
		}
		data = j
	}
	s, err := parseJSON(data)
	if err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// parseJSON decodes a script strictly: unknown fields are errors, and each
// error names the step it is in.
func parseJSON(data []byte) (*Script, error) {
	var raw []json.RawMessage
	switch firstByte(data) {
	case '[':
		if err := strictDecode(data, &raw); err != nil {
			return nil, fmt.Errorf("script: %w", err)
		}
	case '{':
		var doc struct {
			Steps []json.RawMessage `json:"steps"`
		}
		if err := strictDecode(data, &doc); err != nil {
			return nil, fmt.Errorf("script: %w", err)
		}
		raw = doc.Steps
	default:
		return nil, errors.New("script: a script is an object with a steps list, or a list of steps")
	}
	s := &Script{Steps: make([]Step, len(raw))}
	for i, r := range raw {
		if err := strictDecode(r, &s.Steps[i]); err != nil {
			return nil, fmt.Errorf("script: step %d: %w", i+1, err)
		}
	}
	return s, nil
}

func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func firstByte(data []byte) byte {
	data = bytes.TrimLeft(data, " \t\r\n")
	if len(data) == 0 {
		return 0
	}
	return data[0]
}

// Validate reports the first thing wrong with s: no steps, a step with
// neither text nor tool calls, a tool call without a name, arguments that
// are not a JSON object, a negative wait.
func (s *Script) Validate() error {
	if s == nil || len(s.Steps) == 0 {
		return errors.New("script: no steps: a script needs at least one step")
	}
	for i, st := range s.Steps {
		if st.Text == "" && len(st.ToolCalls) == 0 {
			return fmt.Errorf("script: step %d has neither text nor tool_calls: a step is tool calls, a final answer (text), or both", i+1)
		}
		if st.WaitMS < 0 {
			return fmt.Errorf("script: step %d: wait_ms is negative (%d)", i+1, st.WaitMS)
		}
		for j, c := range st.ToolCalls {
			if c.Name == "" {
				return fmt.Errorf("script: step %d, tool call %d: no name", i+1, j+1)
			}
			if len(c.Arguments) > 0 && !isObject(c.Arguments) {
				return fmt.Errorf("script: step %d, tool call %d (%s): arguments must be a JSON object", i+1, j+1, c.Name)
			}
		}
	}
	return nil
}

func isObject(raw json.RawMessage) bool {
	return json.Valid(raw) && firstByte(raw) == '{'
}

// Model is a [model.Model] that plays a script. It keeps no state between
// calls, so one Model may serve any number of runs at once.
type Model struct {
	steps []Step
}

var _ model.Model = (*Model)(nil)

// New returns a model that plays s. It validates s, and copies it: later
// changes to s do not change the model.
func New(s *Script) (*Model, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	m := &Model{steps: make([]Step, len(s.Steps))}
	for i, st := range s.Steps {
		calls := make([]ToolCall, len(st.ToolCalls))
		for j, c := range st.ToolCalls {
			args := []byte("{}")
			if len(c.Arguments) > 0 {
				var b bytes.Buffer
				if err := json.Compact(&b, c.Arguments); err != nil {
					return nil, fmt.Errorf("script: step %d, tool call %d (%s): arguments: %w", i+1, j+1, c.Name, err)
				}
				args = b.Bytes()
			}
			calls[j] = ToolCall{Name: c.Name, Arguments: args, ID: c.ID}
		}
		m.steps[i] = Step{Text: st.Text, ToolCalls: calls, WaitMS: st.WaitMS}
	}
	return m, nil
}

// Steps returns how many steps the script has.
func (m *Model) Steps() int { return len(m.steps) }

// Complete answers with the step that follows the assistant messages already
// in req.Messages. It returns an error wrapping ctx's error (and its cause)
// if ctx is done before it answers, including during a step's wait.
func (m *Model) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	k := 0 // 0-based index of the step to play
	if req != nil {
		for _, msg := range req.Messages {
			if msg.Role == model.RoleAssistant {
				k++
			}
		}
	}
	if err := ctxErr(ctx, k); err != nil {
		return nil, err
	}
	if k >= len(m.steps) {
		return &model.Response{Text: fmt.Sprintf("The script is over: its %d steps have all been played, and this is turn %d.", len(m.steps), k+1)}, nil
	}
	st := m.steps[k]
	if st.WaitMS > 0 {
		t := time.NewTimer(time.Duration(st.WaitMS) * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctxErr(ctx, k)
		}
	}
	resp := &model.Response{Text: st.Text}
	for j, c := range st.ToolCalls {
		resp.ToolCalls = append(resp.ToolCalls, model.ToolCall{
			ID:        cmp.Or(c.ID, CallID(k+1, j+1)),
			Name:      c.Name,
			Arguments: bytes.Clone(c.Arguments),
		})
	}
	return resp, nil
}

// CallID is the id of the index-th tool call of step step, both counted
// from one: "call_<step>_<index>".
func CallID(step, index int) string {
	return fmt.Sprintf("call_%d_%d", step, index)
}

// ctxErr wraps ctx's error, and its cause when that says more, or returns
// nil if ctx is not done.
func ctxErr(ctx context.Context, k int) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return fmt.Errorf("script: turn %d: %w: %w", k+1, err, cause)
	}
	return fmt.Errorf("script: turn %d: %w", k+1, err)
}
