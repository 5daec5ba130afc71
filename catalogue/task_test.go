package catalogue_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// taskServer is an mcptest server with the task tools over HTTP on
// loopback: it outlives the catalogues that talk to it, as a remote server
// outlives a worker.
func taskServer(t *testing.T) (*mcptest.Server, string) {
	t.Helper()
	srv := mcptest.NewServer(&mcptest.Options{Tasks: true})
	hs := httptest.NewServer(srv.HTTPHandler(nil))
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
	})
	return srv, hs.URL + "/mcp"
}

func taskCatalogue(t *testing.T, url, revision string) *catalogue.Catalogue {
	t.Helper()
	cat, err := catalogue.New(&catalogue.Config{Servers: []catalogue.Server{{Name: "web", URL: url, Protocol: revision}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	return cat
}

// startTask calls tool on a catalogue of its own with a task trace, and
// returns the handle the trace was given once the task exists; the call
// goes on in the background until its catalogue is closed (a worker that
// dies).
func startTask(t *testing.T, url, revision, tool, args string) (*agent.Task, *catalogue.Catalogue) {
	t.Helper()
	cat := taskCatalogue(t, url, revision)
	tl, err := cat.Lookup(context.Background(), tool)
	if err != nil || tl == nil {
		t.Fatalf("Lookup(%s) = %v, %v", tool, tl, err)
	}
	created := make(chan *agent.Task, 1)
	done := make(chan struct{})
	ctx := agent.WithTaskTrace(context.Background(), &agent.TaskTrace{Created: func(tk *agent.Task) error {
		created <- tk
		return nil
	}})
	go func() {
		defer close(done)
		tl.Call(ctx, json.RawMessage(args))
	}()
	t.Cleanup(func() { <-done })
	select {
	case tk := <-created:
		return tk, cat
	case <-done:
		t.Fatalf("the call of %s ended without becoming a task", tool)
	}
	return nil, nil
}

func tasksCancelled(srv *mcptest.Server, id string) int {
	n := 0
	for _, r := range srv.Records() {
		if r.Kind == mcptest.TaskCancelRequested && r.Task == id {
			n++
		}
	}
	return n
}

// A call that becomes a task reports its handle — server, id, the
// session's revision — and another catalogue (another process) that has
// only the handle can follow the task to its result, or cancel it, on
// both generations of tasks.
func TestTasksReachedByHandle(t *testing.T) {
	t.Parallel()
	for _, rev := range []string{mcp.Version20251125, mcp.Version20260728} {
		t.Run(rev, func(t *testing.T) {
			t.Parallel()
			srv, url := taskServer(t)

			t.Run("follow", func(t *testing.T) {
				tk, first := startTask(t, url, rev, "mcp_web_task_wait", `{"ms":300}`)
				if tk.Server != "web" || tk.ID == "" || tk.Revision != rev || tk.Status != agent.TaskWorking {
					t.Fatalf("handle = %+v; want server web, an id, revision %s, working", tk, rev)
				}
				first.Close() // the worker dies; its task lives on
				tk.Tool = "mcp_web_task_wait"
				res, err := taskCatalogue(t, url, rev).FollowTask(context.Background(), tk, nil)
				if err != nil || res.Outcome != agent.OutcomeOK {
					t.Fatalf("FollowTask = %+v, %v; want the task's result", res, err)
				}
				calls := toolCalls(srv.Records(), "task_wait")
				if len(calls) != 1 {
					t.Errorf("the server saw %d tools/call; want 1", len(calls))
				}
			})

			t.Run("cancel", func(t *testing.T) {
				tk, first := startTask(t, url, rev, "mcp_web_task_wait", `{"ms":60000}`)
				first.Close()
				outcome, _, err := taskCatalogue(t, url, rev).CancelTask(context.Background(), tk)
				if err != nil || outcome != agent.TaskCancelAcknowledged {
					t.Fatalf("CancelTask = %s, %v; want acknowledged", outcome, err)
				}
				if n := tasksCancelled(srv, tk.ID); n != 1 {
					t.Errorf("the server recorded %d tasks/cancel for %s; want 1", n, tk.ID)
				}
			})

			t.Run("forgotten", func(t *testing.T) {
				tk, first := startTask(t, url, rev, "mcp_web_task_forget", `{}`)
				first.Close()
				tk.Tool = "mcp_web_task_forget"
				_, err := taskCatalogue(t, url, rev).FollowTask(context.Background(), tk, nil)
				if !errors.Is(err, agent.ErrTaskUnknown) {
					t.Fatalf("FollowTask of a forgotten task = %v; want ErrTaskUnknown", err)
				}
			})
		})
	}
}

// A task that fails is the tool's failure (an outcome, not an error): the
// server accounted for it.
func TestAFailedTaskIsTheToolsError(t *testing.T) {
	t.Parallel()
	for _, rev := range []string{mcp.Version20251125, mcp.Version20260728} {
		t.Run(rev, func(t *testing.T) {
			t.Parallel()
			_, url := taskServer(t)
			tl, err := taskCatalogue(t, url, rev).Lookup(context.Background(), "mcp_web_task_fail")
			if err != nil || tl == nil {
				t.Fatal(err)
			}
			res, err := tl.Call(context.Background(), json.RawMessage(`{"message":"no such city"}`))
			if err != nil || res.Outcome != agent.OutcomeError {
				t.Fatalf("Call = %+v, %v; want an error outcome", res, err)
			}
		})
	}
}
