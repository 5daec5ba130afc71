package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/model"
	"github.com/andonhq/andon/sqlstore"
)

type noTools struct{}

func (noTools) Tool(context.Context, string) (agent.Tool, error) { return nil, nil }
func (noTools) List(context.Context) ([]agent.Tool, error)       { return nil, nil }

// A client starts a run through the API and cancels it before any worker
// has taken it.
func ExampleClient() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "andon-api-example")
	defer os.RemoveAll(dir)
	store, err := sqlstore.Open(ctx, filepath.Join(dir, "andon.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	rt, _ := agent.New(agent.Config{Store: store, Tools: noTools{},
		NewModel: func(context.Context, *agent.Request) (model.Model, error) { return nil, fmt.Errorf("no model") }})
	defer rt.Close()
	handler, _ := api.NewHandler(api.Config{Runtime: rt, Store: store})
	srv := httptest.NewServer(handler)
	defer srv.Close()

	c := &api.Client{BaseURL: srv.URL}
	run, err := c.CreateRun(ctx, &agent.Request{Prompt: "hello", Script: json.RawMessage(`{"steps":[{"text":"hi"}]}`)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(run.Status)
	res, err := c.CancelRun(ctx, run.ID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Run.Status, res.Run.Reason)
	_, err = c.CancelRun(ctx, run.ID)
	fmt.Println(err)
	// Output:
	// queued
	// cancelled cancelled
	// api: the run has already finished (conflict)
}
