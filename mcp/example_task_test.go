package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// A tool whose taskSupport is "required" runs as a task: CallTool creates
// it, follows it, and returns its result. OnTaskCreated is where a caller
// persists the handle.
func ExampleClient_CallTool_task() {
	server := mcptest.NewServer(&mcptest.Options{Tasks: true})
	defer server.Close()
	ctx := context.Background()
	c, err := mcp.Connect(ctx, server.Transport(), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	res, err := c.CallTool(ctx, "task_wait", map[string]any{"ms": 10}, &mcp.CallOptions{
		OnTaskCreated: func(t mcp.Task) error {
			fmt.Println("created", t.ID, t.Status, "under", c.ProtocolVersion())
			return nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Text())
	// Output:
	// created mcptest-task-1 working under 2026-07-28
	// task_wait: worked 10ms
}

// A task outlives the call and the client that created it. Another client
// of the same server cancels it by id; the call that created it ends with a
// *TaskError matching ErrCancelled.
func ExampleClient_CancelTask() {
	server := mcptest.NewServer(&mcptest.Options{Tasks: true})
	defer server.Close()
	ctx := context.Background()
	opts := &mcp.ClientOptions{ProtocolVersion: mcp.Version20251125}
	a, err := mcp.Connect(ctx, server.Transport(), opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	b, err := mcp.Connect(ctx, server.Transport(), opts)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()

	ids := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		_, err := a.CallTool(ctx, "task_wait", nil, &mcp.CallOptions{Timeout: time.Minute, OnTaskCreated: func(t mcp.Task) error {
			ids <- t.ID
			return nil
		}})
		done <- err
	}()
	task, err := b.CancelTask(ctx, <-ids, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("the server says:", task.Status)
	err = <-done
	var te *mcp.TaskError
	fmt.Println("the call:", errors.As(err, &te), errors.Is(err, mcp.ErrCancelled))
	// Output:
	// the server says: cancelled
	// the call: true true
}

// FollowTask picks up a task by id — one a process that died created —
// and returns its result without calling the tool again.
func ExampleClient_FollowTask() {
	server := mcptest.NewServer(&mcptest.Options{Tasks: true})
	defer server.Close()
	ctx := context.Background()
	first, err := mcp.Connect(ctx, server.Transport(), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	ids := make(chan string, 1)
	go first.CallTool(ctx, "task_echo", map[string]any{"text": "collected", "ms": 100}, &mcp.CallOptions{Task: true, OnTaskCreated: func(t mcp.Task) error {
		ids <- t.ID
		return nil
	}})
	id := <-ids
	first.Close() // the process that started the task is gone

	second, err := mcp.Connect(ctx, server.Transport(), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer second.Close()
	res, err := second.FollowTask(ctx, id, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Text())
	// Output: collected
}
