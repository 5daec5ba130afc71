package agent

import (
	"encoding/json"

	"github.com/andonhq/andon/model"
)

// transcript is a run's conversation, rebuilt from its recorded steps, so
// that a run resumed — after an approval, or by another worker after a
// crash — goes on from where it was and never replays a call that
// completed.
type transcript struct {
	messages []model.Message
	round    int              // rounds recorded so far
	pending  []model.ToolCall // calls of the last round not yet recorded
	// decided holds operators' decisions on calls, by call id: true for
	// approved.
	decided map[string]bool
}

// rebuild replays steps onto the opening prompt.
func rebuild(prompt string, steps []*Step) (*transcript, error) {
	t := &transcript{messages: []model.Message{{Role: model.RoleUser, Text: prompt}}, decided: map[string]bool{}}
	for _, st := range steps {
		switch st.Kind {
		case StepModel:
			var calls []model.ToolCall
			if len(st.Args) > 0 {
				if err := json.Unmarshal(st.Args, &calls); err != nil {
					return nil, err
				}
			}
			t.messages = append(t.messages, model.Message{Role: model.RoleAssistant, Text: st.Text, ToolCalls: calls})
			t.round = st.Round
			t.pending = calls
		case StepApproval:
			var ref suspension
			if json.Unmarshal(st.Args, &ref) == nil && ref.CallID != "" {
				t.decided[ref.CallID] = st.Outcome == OutcomeOK
			}
		case StepTool:
			if len(t.pending) == 0 {
				continue // a step of a call the model never made: nothing to answer
			}
			call := t.pending[0]
			t.pending = t.pending[1:]
			t.messages = append(t.messages, model.Message{Role: model.RoleTool, ToolCallID: call.ID, Text: st.Text})
		}
	}
	return t, nil
}

// answer adds the result of the first pending call.
func (t *transcript) answer(text string) {
	call := t.pending[0]
	t.pending = t.pending[1:]
	t.messages = append(t.messages, model.Message{Role: model.RoleTool, ToolCallID: call.ID, Text: text})
}
