package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/model"
	"github.com/andonhq/andon/sqlstore"
)

// A client follows a run on the event stream: it starts with the run's
// current state, and shows the cancel as it lands.
func Example_events() {
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

	streamCtx, stop := context.WithCancel(ctx)
	defer stop()
	req, _ := http.NewRequestWithContext(streamCtx, "GET", srv.URL+"/v1/events?run="+run.ID, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	fmt.Println(resp.Header.Get("Content-Type"))
	events := bufio.NewScanner(resp.Body)
	var name string
	for events.Scan() {
		line := events.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && name == "run":
			var r api.Run
			json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &r)
			fmt.Println(name, r.Status)
			if r.Status == "queued" {
				c.CancelRun(ctx, run.ID)
			} else {
				return
			}
		}
	}
	// Output:
	// text/event-stream
	// run queued
	// run cancelled
}
