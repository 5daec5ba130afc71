package script_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/andonhq/andon/model"
	"github.com/andonhq/andon/model/script"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const yamlScript = `
steps:
  - tool_calls:
      - name: mcp_demo_echo
        arguments: {text: hello, when: 2024-01-01, n: 12, big: 18446744073709551615, f: 1.5, ok: true, none: null, list: [1, "2"]}
      - name: mcp_demo_slow
  - text: thinking aloud
    tool_calls:
      - name: mcp_demo_slow
        arguments:
          ms: 30000
    wait_ms: 1
  - text: All done.
`

const jsonScript = `{"steps": [
  {"tool_calls": [{"name": "mcp_demo_echo", "arguments": {"text": "hello",  "n": 1.0e2}}]},
  {"text": "All done."}
]}`

func mustModel(t *testing.T, src string) *script.Model {
	t.Helper()
	s, err := script.Parse([]byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	m, err := script.New(s)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

// play runs the model the way the runtime does: each turn is appended to
// the conversation, each tool call answered.
func play(t *testing.T, m model.Model, msgs []model.Message) (*model.Response, []model.Message) {
	t.Helper()
	resp, err := m.Complete(context.Background(), &model.Request{Messages: msgs})
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	msgs = append(msgs, model.Message{Role: model.RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls})
	for _, c := range resp.ToolCalls {
		msgs = append(msgs, model.Message{Role: model.RoleTool, ToolCallID: c.ID, Text: "result of " + c.Name})
	}
	return resp, msgs
}

func TestYAML(t *testing.T) {
	m := mustModel(t, yamlScript)
	if m.Steps() != 3 {
		t.Fatalf("Steps = %d, want 3", m.Steps())
	}
	msgs := []model.Message{{Role: model.RoleUser, Text: "go"}}
	resp, msgs := play(t, m, msgs)
	if resp.Text != "" || len(resp.ToolCalls) != 2 {
		t.Fatalf("turn 1 = %+v", resp)
	}
	c := resp.ToolCalls[0]
	if c.ID != "call_1_1" || c.Name != "mcp_demo_echo" {
		t.Errorf("call 1 = %+v", c)
	}
	// A date stays the string it was written as, integers stay integers
	// (even past int64), and the rest keeps its JSON meaning.
	want := `{"text":"hello","when":"2024-01-01","n":12,"big":18446744073709551615,"f":1.5,"ok":true,"none":null,"list":[1,"2"]}`
	if string(c.Arguments) != want {
		t.Errorf("arguments = %s\nwant        %s", c.Arguments, want)
	}
	if c := resp.ToolCalls[1]; c.ID != "call_1_2" || string(c.Arguments) != "{}" {
		t.Errorf("call 2 = %+v, want id call_1_2 and arguments {}", c)
	}

	resp, msgs = play(t, m, msgs)
	if resp.Text != "thinking aloud" || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].ID != "call_2_1" ||
		string(resp.ToolCalls[0].Arguments) != `{"ms":30000}` {
		t.Fatalf("turn 2 = %+v", resp)
	}
	resp, msgs = play(t, m, msgs)
	if resp.Text != "All done." || len(resp.ToolCalls) != 0 {
		t.Fatalf("turn 3 = %+v", resp)
	}
	// Past the end: a final answer that says so.
	resp, _ = play(t, m, msgs)
	if !strings.Contains(resp.Text, "script is over") || len(resp.ToolCalls) != 0 {
		t.Fatalf("turn 4 = %+v", resp)
	}
}

func TestJSONKeepsArguments(t *testing.T) {
	m := mustModel(t, jsonScript)
	resp, _ := play(t, m, nil)
	// JSON arguments are compacted, never re-encoded: 1.0e2 stays 1.0e2.
	if got := string(resp.ToolCalls[0].Arguments); got != `{"text":"hello","n":1.0e2}` {
		t.Errorf("arguments = %s", got)
	}
}

func TestBareList(t *testing.T) {
	for _, src := range []string{"- text: hi\n", `[{"text":"hi"}]`} {
		m := mustModel(t, src)
		resp, _ := play(t, m, nil)
		if resp.Text != "hi" {
			t.Errorf("%q: text = %q", src, resp.Text)
		}
	}
}

// The step played is derived from the conversation, not from state in the
// model: a resumed run, or a second run on the same model, plays the right
// step.
func TestResumeFromConversation(t *testing.T) {
	m := mustModel(t, yamlScript)
	conv := []model.Message{
		{Role: model.RoleUser, Text: "go"},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "call_1_1", Name: "mcp_demo_echo"}}},
		{Role: model.RoleTool, ToolCallID: "call_1_1", Text: "hello"},
	}
	for range 2 { // twice: no state is kept between calls
		resp, err := m.Complete(context.Background(), &model.Request{Messages: conv})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].ID != "call_2_1" {
			t.Fatalf("resumed turn = %+v, want step 2", resp)
		}
	}
	// A fresh conversation starts at step 1.
	resp, err := m.Complete(context.Background(), &model.Request{})
	if err != nil || len(resp.ToolCalls) != 2 {
		t.Fatalf("fresh turn = %+v, %v", resp, err)
	}
}

// What Complete returns is the caller's: changing it changes no later turn.
func TestResponsesAreCopies(t *testing.T) {
	m := mustModel(t, jsonScript)
	resp, _ := play(t, m, nil)
	resp.ToolCalls[0].Arguments[2] = 'X'
	again, _ := play(t, m, nil)
	if got := string(again.ToolCalls[0].Arguments); got != `{"text":"hello","n":1.0e2}` {
		t.Errorf("arguments after the caller changed its copy = %s", got)
	}
}

func TestNewCopiesScript(t *testing.T) {
	s := &script.Script{Steps: []script.Step{{Text: "one"}}}
	m, err := script.New(s)
	if err != nil {
		t.Fatal(err)
	}
	s.Steps[0].Text = "changed"
	resp, _ := play(t, m, nil)
	if resp.Text != "one" {
		t.Errorf("text = %q, want one", resp.Text)
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	s, err := script.Parse([]byte(yamlScript))
	if err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := script.Parse(j)
	if err != nil {
		t.Fatalf("Parse(json.Marshal(script)): %v\n%s", err, j)
	}
	j2, _ := json.Marshal(back)
	if string(j) != string(j2) {
		t.Errorf("round trip changed the script:\n%s\n%s", j, j2)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"empty", ``, "the script is empty"},
		{"comment only", "# nothing\n", "the script is empty"},
		{"no steps", `steps: []`, "no steps"},
		{"no steps JSON", `{}`, "no steps"},
		{"null", `null`, "a script is an object"},
		{"scalar", `hello`, "a script is an object"},
		{"neither", "steps:\n  - wait_ms: 5\n", "step 1 has neither text nor tool_calls"},
		{"empty step", `[{"text":"a"},{}]`, "step 2 has neither"},
		{"unknown step field", "- text: hi\n- answer: done\n", `step 2: json: unknown field "answer"`},
		{"unknown call field", "- tool_calls: [{name: x, args: {}}]\n", `step 1: json: unknown field "args"`},
		{"unknown top field", "steps: [{text: hi}]\nmodel: gpt\n", `unknown field "model"`},
		{"no name", "- tool_calls: [{arguments: {}}]\n", "step 1, tool call 1: no name"},
		{"arguments not an object", "- tool_calls: [{name: x, arguments: [1]}]\n", "step 1, tool call 1 (x): arguments must be a JSON object"},
		{"arguments a string", `[{"tool_calls":[{"name":"x","arguments":"{}"}]}]`, "arguments must be a JSON object"},
		{"negative wait", "- text: hi\n  wait_ms: -1\n", "wait_ms is negative"},
		{"wrong type", "- text: [1]\n", "step 1: json: cannot unmarshal"},
		{"bad yaml", "steps: [\n", "yaml:"},
		{"alias", "a: &x {text: hi}\nsteps: [*x]\n", "line 2: YAML aliases are not supported"},
		{"duplicate key", "- text: a\n  text: b\n", `line 2: key "text" appears twice`},
		{"infinity", "- tool_calls: [{name: x, arguments: {n: .inf}}]\n", ".inf has no JSON form"},
		{"two documents", "- text: a\n---\n- text: b\n", "one YAML document"},
		{"custom tag", "- text: !!python/object x\n", "not supported"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := script.Parse([]byte(c.src))
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", s)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "script: ") {
				t.Errorf("error = %q, want it to start with \"script: \" and contain %q", err, c.want)
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := script.New(&script.Script{}); err == nil {
		t.Error("New accepted an empty script")
	}
	if _, err := script.New(nil); err == nil {
		t.Error("New accepted a nil script")
	}
}

func TestContext(t *testing.T) {
	m := mustModel(t, "- text: slow\n  wait_ms: 60000\n")

	// Done before the call.
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("run cancelled")
	cancel(cause)
	if _, err := m.Complete(ctx, &model.Request{}); !errors.Is(err, context.Canceled) || !errors.Is(err, cause) {
		t.Errorf("Complete on a cancelled context = %v, want context.Canceled and the cause", err)
	}

	// Done during a step's wait: it returns at once.
	ctx, cancel2 := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := m.Complete(ctx, &model.Request{})
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	cancel2()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Complete cancelled during its wait = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Complete did not return after its context was cancelled")
	}

	// A deadline.
	ctx, cancel3 := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel3()
	if _, err := m.Complete(ctx, &model.Request{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Complete past its deadline = %v, want context.DeadlineExceeded", err)
	}
}

func TestWait(t *testing.T) {
	m := mustModel(t, "- text: slow\n  wait_ms: 30\n")
	start := time.Now()
	if _, err := m.Complete(context.Background(), &model.Request{}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 30*time.Millisecond {
		t.Errorf("a step with wait_ms 30 answered after %v", took)
	}
}

func TestCallID(t *testing.T) {
	if got := script.CallID(3, 2); got != "call_3_2" {
		t.Errorf("CallID(3, 2) = %q", got)
	}
}

// A script may give its calls ids of its own, as providers that number
// calls per response do, reusing them from turn to turn.
func TestScriptGivenCallIDs(t *testing.T) {
	m := mustModel(t, `
steps:
  - tool_calls:
      - {name: deploy, arguments: {env: staging}, id: call_0}
      - {name: deploy, arguments: {env: qa}}
  - tool_calls:
      - {name: deploy, arguments: {env: production}, id: call_0}
  - text: done
`)
	first, msgs := play(t, m, []model.Message{{Role: model.RoleUser, Text: "go"}})
	second, _ := play(t, m, msgs)
	if len(first.ToolCalls) != 2 || first.ToolCalls[0].ID != "call_0" || first.ToolCalls[1].ID != script.CallID(1, 2) {
		t.Fatalf("first turn's calls = %+v; want ids call_0 and %s", first.ToolCalls, script.CallID(1, 2))
	}
	if len(second.ToolCalls) != 1 || second.ToolCalls[0].ID != "call_0" || string(second.ToolCalls[0].Arguments) != `{"env":"production"}` {
		t.Fatalf("second turn's calls = %+v; want call_0 again, with the production arguments", second.ToolCalls)
	}
}
