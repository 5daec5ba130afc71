package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/model"
	"github.com/andonhq/andon/model/script"
	"github.com/andonhq/andon/sqlstore"
)

// greeter is a tool that asks the operator for a name (as an MCP server's
// elicitation does, through the catalogue) and greets them.
type greeter struct{}

func (greeter) Spec() agent.ToolSpec   { return agent.ToolSpec{Name: "greet"} }
func (greeter) Effect() agent.Effect   { return agent.EffectReadOnly }
func (greeter) RequiresApproval() bool { return false }
func (greeter) Call(ctx context.Context, _ json.RawMessage) (*agent.ToolResult, error) {
	ans, err := agent.Ask(ctx, &agent.Question{Server: "hello", Message: "Your name?",
		Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)})
	if err != nil {
		return nil, err
	}
	var v struct{ Name string }
	json.Unmarshal(ans.Content, &v)
	return &agent.ToolResult{Outcome: agent.OutcomeOK, Text: ans.Action + ": hello, " + v.Name}, nil
}

// A tool asks the operator during a run: the run waits for input with the
// question stored, and an answer — checked against the question's schema —
// lets it go on.
func ExampleAsk() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "andon-example")
	defer os.RemoveAll(dir)
	store, err := sqlstore.Open(ctx, filepath.Join(dir, "andon.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	rt, err := agent.New(agent.Config{Store: store, Inputs: store, Tools: oneTool{greeter{}},
		NewModel: func(_ context.Context, req *agent.Request) (model.Model, error) {
			s, err := script.Parse(req.Script)
			if err != nil {
				return nil, err
			}
			return script.New(s)
		}})
	if err != nil {
		fmt.Println(err)
		return
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); rt.Run(runCtx) }()
	defer func() { stop(); <-done }()

	run, _ := rt.Submit(ctx, "alice", &agent.Request{Prompt: "Greet me.",
		Script: json.RawMessage(`{"steps":[{"tool_calls":[{"name":"greet"}]},{"text":"Greeted."}]}`)})
	var q *agent.InputRequest
	for q == nil {
		time.Sleep(5 * time.Millisecond)
		q, _ = store.InputPending(ctx, run.ID)
	}
	fmt.Println(q.Server, "asks:", q.Message)
	alice := agent.Actor{ID: "alice"}
	err = rt.Answer(ctx, alice, agent.Reply{RunID: run.ID, Content: json.RawMessage(`{"nom":"Ada"}`)})
	fmt.Println(err)
	err = rt.Answer(ctx, alice, agent.Reply{RunID: run.ID, Question: q.ID, Content: json.RawMessage(`{"name":"Ada"}`)})
	fmt.Println(err)
	for {
		got, _ := store.RunGet(ctx, run.ID)
		if got.Status.Terminal() {
			steps, _ := store.StepList(ctx, run.ID)
			for _, s := range steps {
				if s.Kind == agent.StepTool {
					fmt.Println(got.Status, "—", s.Text)
				}
			}
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Output:
	// hello asks: Your name?
	// agent: the answer does not fit the requested schema: field / fails "required"
	// <nil>
	// completed — accept: hello, Ada
}
