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

// clock is a read-only tool that tells the time.
type clock struct{}

func (clock) Spec() agent.ToolSpec {
	return agent.ToolSpec{Name: "clock", Description: "Tells the time."}
}
func (clock) Effect() agent.Effect   { return agent.EffectReadOnly }
func (clock) RequiresApproval() bool { return false }
func (clock) Call(context.Context, json.RawMessage) (*agent.ToolResult, error) {
	return &agent.ToolResult{Outcome: agent.OutcomeOK, Text: "noon"}, nil
}

type oneTool struct{ t agent.Tool }

func (o oneTool) Tool(_ context.Context, name string) (agent.Tool, error) {
	if name == o.t.Spec().Name {
		return o.t, nil
	}
	return nil, nil
}
func (o oneTool) List(context.Context) ([]agent.Tool, error) { return []agent.Tool{o.t}, nil }

// A runtime on a SQLite store runs a scripted model that calls one tool.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "andon-example")
	defer os.RemoveAll(dir)
	store, err := sqlstore.Open(ctx, filepath.Join(dir, "andon.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	rt, err := agent.New(agent.Config{
		Store: store,
		Tools: oneTool{clock{}},
		NewModel: func(_ context.Context, req *agent.Request) (model.Model, error) {
			s, err := script.Parse(req.Script)
			if err != nil {
				return nil, err
			}
			return script.New(s)
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); rt.Run(runCtx) }()
	defer func() { stop(); <-done }()

	run, err := rt.Submit(ctx, "alice", &agent.Request{
		Prompt: "What time is it?",
		Script: json.RawMessage(`{"steps":[{"tool_calls":[{"name":"clock"}]},{"text":"It is noon."}]}`),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for {
		got, _ := store.RunGet(ctx, run.ID)
		if got.Status.Terminal() {
			steps, _ := store.StepList(ctx, run.ID)
			fmt.Println(got.Status, len(steps), steps[len(steps)-1].Text)
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Output: completed 3 It is noon.
}
