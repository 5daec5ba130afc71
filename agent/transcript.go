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
	step     int              // seq of the model step that asked for them
	answered int              // calls of that step already answered
	asked    int              // calls the model asked for in all, that step's included
	turnSize int              // calls that step asked for
	// decided holds operators' decisions, by the exact call they name:
	// a decision covers that call and no other.
	decided map[CallRef]*Approval
}

// rebuild replays steps onto the opening prompt, with the decisions made
// on the run's calls.
func rebuild(prompt string, steps []*Step, decisions []*Approval) (*transcript, error) {
	t := &transcript{messages: []model.Message{{Role: model.RoleUser, Text: prompt}}, decided: map[CallRef]*Approval{}}
	for _, a := range decisions {
		t.decided[a.CallRef] = a
	}
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
			t.turn(st.Seq, calls)
		case StepTool:
			if len(t.pending) == 0 {
				continue // a step of a call the model never made: nothing to answer
			}
			t.answer(st.Text)
		}
	}
	return t, nil
}

// turn makes the calls of the model step numbered seq the pending ones.
func (t *transcript) turn(seq int, calls []model.ToolCall) {
	t.pending, t.step, t.answered = calls, seq, 0
	t.turnSize = len(calls)
	t.asked += len(calls)
}

// answer adds the result of the first pending call.
func (t *transcript) answer(text string) {
	call := t.pending[0]
	t.pending = t.pending[1:]
	t.answered++
	t.messages = append(t.messages, model.Message{Role: model.RoleTool, ToolCallID: call.ID, Text: text})
}

// decision returns the decision on call — the first pending one — if an
// operator made one on exactly that call.
func (t *transcript) decision(c *PendingCall) *Approval {
	return t.decided[c.CallRef]
}
