package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/model"
)

// nested is JSON arrays nested depth deep: [[…]].
func nested(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

// A run request nested deeper than MaxJSONDepth, or larger than
// MaxRequestBytes, is refused by Submit with an error naming the limit,
// and nothing is stored; one at the limit is taken, compact.
func TestSubmitBoundsTheRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, nil) // not started: runs stay queued
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		req   agent.Request
		limit string // "" for taken
	}{
		// The script is one level inside the request.
		{"5000 deep", agent.Request{Prompt: "p", Script: json.RawMessage(nested(5000))}, "agent.MaxJSONDepth"},
		{"one too deep", agent.Request{Prompt: "p", Script: json.RawMessage(nested(agent.MaxJSONDepth))}, "agent.MaxJSONDepth"},
		{"at the limit", agent.Request{Prompt: "p", Script: json.RawMessage(nested(agent.MaxJSONDepth - 1))}, ""},
		{"brackets in a string are text", agent.Request{Prompt: "p", Script: json.RawMessage(`{"a":"` + nested(5000) + `"}`)}, ""},
		{"too large", agent.Request{Prompt: strings.Repeat("p", agent.MaxRequestBytes)}, "agent.MaxRequestBytes"},
	} {
		run, err := b.rt.Submit(ctx, "alice", &tc.req)
		var le *agent.LimitError
		switch {
		case tc.limit == "" && err != nil:
			t.Errorf("%s: Submit = %v, want it taken", tc.name, err)
		case tc.limit == "":
			if strings.ContainsAny(string(run.Request), " \n") {
				t.Errorf("%s: stored request %.80s…, want it compact", tc.name, run.Request)
			}
		case !errors.As(err, &le) || !errors.Is(err, agent.ErrLimit) || le.Limit != tc.limit || !strings.Contains(err.Error(), tc.limit):
			t.Errorf("%s: Submit = %v, want a LimitError naming %s", tc.name, err, tc.limit)
		}
	}
	runs, err := b.store.RunList(ctx, agent.RunFilter{})
	if err != nil || len(runs) != 2 {
		t.Fatalf("stored %d runs (%v), want the 2 taken", len(runs), err)
	}
}

// argsModel plays turns of tool calls whose arguments the test gives,
// then a final answer; it keeps every request it was asked.
type argsModel struct {
	turns [][]model.ToolCall
	mu    sync.Mutex
	asked []*model.Request
}

func (m *argsModel) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.asked = append(m.asked, &model.Request{Messages: append([]model.Message(nil), req.Messages...)})
	k := 0
	for _, msg := range req.Messages {
		if msg.Role == model.RoleAssistant {
			k++
		}
	}
	if k >= len(m.turns) {
		return &model.Response{Text: "done"}, nil
	}
	return &model.Response{ToolCalls: m.turns[k]}, nil
}

// toolMessages is the text of every tool message the model was shown.
func (m *argsModel) toolMessages() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, msg := range m.asked[len(m.asked)-1].Messages {
		if msg.Role == model.RoleTool {
			out = append(out, msg.Text)
		}
	}
	return strings.Join(out, "\n")
}

// A model's tool call whose arguments nest deeper than MaxJSONDepth, or
// are larger than MaxArgumentsBytes, is not made and its arguments are not
// stored: a refusal naming the limit stands in for them, in the model step
// and the tool step; the call's step fails with a reason naming the limit,
// which the model is told; the other calls go on. A run resumed from its
// steps (after an approval) refuses the call again. Arguments that are not
// JSON reach the tool as a JSON string of their text, as model/openai
// passes them.
func TestAModelsCallOverALimitIsRefused(t *testing.T) {
	t.Parallel()
	deep := `{"a":` + nested(5000) + `}`
	large := `{"a":"` + strings.Repeat("x", agent.MaxArgumentsBytes) + `"}`
	m := &argsModel{turns: [][]model.ToolCall{
		{{ID: "c1", Name: "echo", Arguments: json.RawMessage(deep)}, {ID: "c2", Name: "echo", Arguments: json.RawMessage(` { "ok" : true } `)}},
		// The approval suspends the run; the call after it is played
		// from the stored step once the run resumes.
		{{ID: "c3", Name: "deploy", Arguments: json.RawMessage(`{}`)}, {ID: "c4", Name: "echo", Arguments: json.RawMessage(large)},
			{ID: "c5", Name: "echo", Arguments: json.RawMessage(`{"a": `)}},
	}}
	b := setup(t, func(c *agent.Config) {
		c.NewModel = func(context.Context, *agent.Request) (model.Model, error) { return m, nil }
	})
	echo := b.tools.add(&testTool{name: "echo", effect: agent.EffectReadOnly})
	b.tools.add(&testTool{name: "deploy", effect: agent.EffectReadOnly, approval: true})
	b.start()
	run := b.submit("alice")
	b.waitStatus(run.ID, agent.StatusWaitingForApproval)
	if err := b.rt.Approve(context.Background(), agent.Actor{ID: "alice"}, run.ID); err != nil {
		t.Fatal(err)
	}
	b.waitStatus(run.ID, agent.StatusCompleted)

	if got := echo.called(); strings.Join(got, " ") != `{"ok":true} "{\"a\": "` {
		for i := range got {
			if len(got[i]) > 100 {
				got[i] = got[i][:100] + "…"
			}
		}
		t.Errorf("echo was called with %q; want the compacted call and the unreadable one's text as a string, none of the others", got)
	}
	var refusals []string
	for _, st := range b.steps(run.ID) {
		if len(st.Args) > 2*agent.MaxArgumentsBytes {
			t.Errorf("step %d (%s) stores %d bytes of arguments", st.Seq, st.Kind, len(st.Args))
		}
		if st.Kind == agent.StepTool && st.Outcome == agent.OutcomeFailed {
			refusals = append(refusals, st.Text)
			if !strings.Contains(string(st.Args), "andon refused the call") {
				t.Errorf("refused step %d stores arguments %.100s", st.Seq, st.Args)
			}
		}
	}
	want := []string{"agent.MaxJSONDepth", "agent.MaxArgumentsBytes"}
	if len(refusals) != 2 || !strings.Contains(refusals[0], want[0]) || !strings.Contains(refusals[1], want[1]) {
		t.Fatalf("failed tool steps %q, want two naming %v", refusals, want)
	}
	if told := m.toolMessages(); !strings.Contains(told, want[0]) || !strings.Contains(told, want[1]) {
		t.Errorf("the model was told %q, want the limits named", told)
	}
}

// An answer nested deeper than MaxJSONDepth is refused with a LimitError,
// and the question still waits; an answer within the limits is stored
// compact.
func TestAnAnswerOverALimitIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, withInputs)
	ask := askingTool(b, "ask")
	b.start()
	run := b.submit("alice", turn{Calls: []string{"ask"}}, turn{Final: "done"})
	b.pending(run.ID)
	alice := agent.Actor{ID: "alice"}
	err := b.rt.Answer(context.Background(), alice, agent.Reply{RunID: run.ID, Content: json.RawMessage(`{"name":` + nested(5000) + `}`)})
	if !errors.Is(err, agent.ErrLimit) || !strings.Contains(err.Error(), "agent.MaxJSONDepth") {
		t.Fatalf("Answer nested 5000 deep = %v, want a LimitError naming agent.MaxJSONDepth", err)
	}
	b.pending(run.ID) // still waiting
	if err := b.rt.Answer(context.Background(), alice, agent.Reply{RunID: run.ID, Content: json.RawMessage(`{ "name" : "bob" }`)}); err != nil {
		t.Fatal(err)
	}
	b.waitStatus(run.ID, agent.StatusCompleted)
	if got := toolStepText(b.steps(run.ID)); got != `accept {"name":"bob"}` || ask.calls.Load() != 1 {
		t.Errorf("the tool got %q, want the answer compact", got)
	}
}
