package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

var errStopping = errors.New("the process is stopping")

// OnTaskCancel learns what the server said to the tasks/cancel a cancelled
// call sent; DetachTask lets a caller that is only shutting down leave the
// task running, for another client to follow by its id.
func ExampleCallOptions_detachTask() {
	server := mcptest.NewServer(&mcptest.Options{Tasks: true})
	defer server.Close()
	ctx := context.Background()
	c, err := mcp.Connect(ctx, server.Transport(), &mcp.ClientOptions{ProtocolVersion: mcp.Version20251125})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	call := func(cause error) string {
		callCtx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		answered := make(chan string, 1)
		var id string
		_, err := c.CallTool(callCtx, "task_wait", nil, &mcp.CallOptions{
			Timeout: time.Minute,
			OnTaskCreated: func(t mcp.Task) error {
				id = t.ID
				go cancel(cause) // the caller's context ends while the task works
				return nil
			},
			OnTaskCancel: func(t mcp.Task, err error) { answered <- fmt.Sprintf("tasks/cancel: %s, %v", t.Status, err) },
			DetachTask:   func(cause error) bool { return errors.Is(cause, errStopping) },
		})
		fmt.Println("the call:", errors.Is(err, mcp.ErrCancelled))
		if errors.Is(cause, errStopping) {
			t, err := c.GetTask(ctx, id, nil)
			if err != nil {
				return err.Error()
			}
			return "detached, the task is " + string(t.Status)
		}
		return <-answered
	}
	fmt.Println(call(errors.New("the run was cancelled")))
	fmt.Println(call(errStopping))
	// Output:
	// the call: true
	// tasks/cancel: cancelled, <nil>
	// the call: true
	// detached, the task is working
}
