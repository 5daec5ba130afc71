package interop

import (
	"context"
	"errors"
	"net"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"

	"github.com/andonhq/andon/mcp"
)

// mcp-go v1.2.1's server task tools are cancelled the moment they are
// created: executeTaskTool derives the task's context from the tools/call
// request's, which ends when the CreateTaskResult has been sent. The task
// then goes to "cancelled" ("context canceled") on its own, before any
// tasks/cancel. So against mcp-go this tests what can be tested: creation,
// detection, the status the server reports, and tasks/cancel on a task that
// is already terminal (answered -32602, which CancelTask reports as
// ErrTaskTerminal and the call tolerates).

// mcpgoTaskEvents records what mcp-go's task tool saw.
type mcpgoTaskEvents struct {
	mu        sync.Mutex
	started   time.Time
	cancelled time.Time
	cause     error
	done      chan struct{}
}

func newMCPGoTaskServer(ev *mcpgoTaskEvents) *mcpgoserver.MCPServer {
	s := mcpgoserver.NewMCPServer("interop-mcpgo-tasks", "1",
		mcpgoserver.WithToolCapabilities(false),
		mcpgoserver.WithTaskCapabilities(true, true, true))
	s.AddTaskTool(mcpgo.NewTool("work",
		mcpgo.WithDescription("Works for a minute as a task."),
		mcpgo.WithTaskSupport(mcpgo.TaskSupportRequired),
	), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CreateTaskResult, error) {
		ev.mu.Lock()
		ev.started = time.Now()
		ev.mu.Unlock()
		t := time.NewTimer(time.Minute)
		defer t.Stop()
		select {
		case <-ctx.Done():
			ev.mu.Lock()
			ev.cancelled, ev.cause = time.Now(), ctx.Err()
			ev.mu.Unlock()
			close(ev.done)
			return nil, ctx.Err()
		case <-t.C:
			close(ev.done)
			res := mcpgo.NewCreateTaskResult(mcpgo.NewTask(""))
			return &res, nil
		}
	})
	return s
}

func TestTasksMCPGoServer(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			ev := &mcpgoTaskEvents{done: make(chan struct{})}
			srv := newMCPGoTaskServer(ev)
			var tr mcp.Transport
			if transport == "stdio" {
				client, server := net.Pipe()
				ctx, stop := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() {
					defer close(done)
					mcpgoserver.NewStdioServer(srv).Listen(ctx, server, server)
				}()
				t.Cleanup(func() {
					stop()
					server.Close()
					<-done
				})
				tr = mcp.Stream(client)
			} else {
				hs := httptest.NewServer(mcpgoserver.NewStreamableHTTPServer(srv, mcpgoserver.WithStateful(true)))
				t.Cleanup(hs.Close)
				tr = mcp.HTTP(hs.URL+"/mcp", hs.Client())
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := mcp.Connect(ctx, tr, &mcp.ClientOptions{ProtocolVersion: mcp.Version20251125, Logger: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if !c.TasksSupported() {
				t.Fatalf("mcp-go's tasks not detected: %s", c.Server().Capabilities)
			}

			var created mcp.Task
			var seen []mcp.TaskStatus
			_, err = c.CallTool(ctx, "work", nil, &mcp.CallOptions{
				OnTaskCreated: func(t mcp.Task) error { created = t; return nil },
				OnTaskStatus:  func(t mcp.Task) { seen = append(seen, t.Status) },
			})
			if created.ID == "" {
				t.Fatalf("no task created: %v", err)
			}
			// The peer's bug: the task ends cancelled by itself.
			var te *mcp.TaskError
			if !errors.As(err, &te) || te.Status != mcp.TaskCancelled {
				t.Fatalf("err = %v, want the cancelled *TaskError mcp-go's bug produces", err)
			}
			<-ev.done
			ev.mu.Lock()
			cause, gap := ev.cause, ev.cancelled.Sub(ev.started)
			ev.mu.Unlock()
			if !errors.Is(cause, context.Canceled) {
				t.Errorf("the handler ended with %v, not its context cancelled", cause)
			}
			t.Logf("mcp-go v1.2.1: the task's handler was cancelled %v after it started, before any tasks/cancel (status seen: %v)", gap, seen)

			// tasks/cancel on the terminal task: -32602, tolerated.
			task, err := c.CancelTask(ctx, created.ID, nil)
			if !errors.Is(err, mcp.ErrTaskTerminal) || task == nil || task.Status != mcp.TaskCancelled {
				t.Errorf("CancelTask of the ended task = %+v, %v; want ErrTaskTerminal with status cancelled", task, err)
			}
			got, err := c.GetTask(ctx, created.ID, nil)
			if err != nil || got.Status != mcp.TaskCancelled {
				t.Errorf("GetTask = %+v, %v", got, err)
			}
			if _, err := c.ListTools(ctx, nil); err != nil {
				t.Errorf("the connection no longer serves: %v", err)
			}
		})
	}
}
