package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
	"github.com/andonhq/andon/sqlstore"
)

// A run whose call became an MCP task shows the task on its detail — the
// server, the task id, its revision, its state — and a cancel's answer says
// what became of it: here the worker holding the call (this process) sends
// tasks/cancel, which the server receives for that task, and the task then
// reads cancelling (or cancelled), not working.
func TestARunShowsItsTaskAndTheCancelReportsOnIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, filepath.Join(t.TempDir(), "andon.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := mcptest.NewServer(&mcptest.Options{Tasks: true})
	t.Cleanup(srv.Close)
	no := false
	cat, err := catalogue.New(&catalogue.Config{Servers: []catalogue.Server{{Name: "test", Command: []string{"unused"},
		RequiresApproval: &no, Protocol: mcp.Version20251125}}}, &catalogue.Options{
		Dial: func(context.Context, catalogue.Server) (mcp.Transport, error) { return srv.Transport(), nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	rt := newRuntime(t, st, cat, slog.New(slog.DiscardHandler), false)
	h, err := api.NewHandler(api.Config{Runtime: rt, Store: st, Catalogue: cat})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	client := &api.Client{BaseURL: hs.URL, HTTP: hs.Client()}

	run, err := client.CreateRun(ctx, &agent.Request{Prompt: "test",
		Script: json.RawMessage(`{"steps":[{"tool_calls":[{"name":"mcp_test_task_wait","arguments":{"ms":60000}}]},{"text":"done"}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	d := waitDetail(t, client, run.ID, func(d *api.RunDetail) bool { return len(d.Tasks) == 1 })
	task := d.Tasks[0]
	if task.Server != "test" || task.TaskID == "" || task.Revision != mcp.Version20251125 || task.State != "working" ||
		task.Tool != "mcp_test_task_wait" || task.Step != 1 || task.Call != 1 {
		t.Fatalf("task = %+v; want test's task of mcp_test_task_wait (step 1, call 1), working, under 2025-11-25", task)
	}

	res, err := client.CancelRun(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tasks) != 1 || !res.Tasks[0].ByHolder || res.Tasks[0].TaskID != task.TaskID {
		t.Fatalf("cancel's tasks = %+v; want %s, cancelled by its holder", res.Tasks, task.TaskID)
	}
	wctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	if _, err := srv.WaitFor(wctx, func(r mcptest.Record) bool { return r.Kind == mcptest.TaskCancelRequested && r.Task == task.TaskID }); err != nil {
		t.Fatalf("the server never received tasks/cancel for %s: %v", task.TaskID, err)
	}
	d = waitDetail(t, client, run.ID, func(d *api.RunDetail) bool { return len(d.Steps) == 2 })
	if s := d.Tasks[0].State; s != "cancelling" && s != "cancelled" {
		t.Errorf("after the cancel the task reads %q; want cancelling or cancelled", s)
	}
}

func waitDetail(t *testing.T, c *api.Client, id string, done func(*api.RunDetail) bool) *api.RunDetail {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		d, err := c.GetRun(context.Background(), id)
		if err == nil && done(d) {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s never got there: %+v, %v", id, d, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
