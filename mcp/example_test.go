package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

func ExampleClient_CallTool() {
	server := mcptest.NewServer(nil)
	defer server.Close()

	ctx := context.Background()
	c, err := mcp.Connect(ctx, server.Transport(), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	res, err := c.CallTool(ctx, "echo", map[string]any{"text": "hello"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.ProtocolVersion(), res.Text())
	// Output: 2026-07-28 hello
}

// A call is stopped by its context or by its Timeout; the server is told,
// and the connection goes on serving.
func ExampleCallOptions_timeout() {
	server := mcptest.NewServer(nil)
	defer server.Close()
	ctx := context.Background()
	c, err := mcp.Connect(ctx, server.Transport(), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	_, err = c.CallTool(ctx, "slow", map[string]any{"ms": 60000}, &mcp.CallOptions{Timeout: 50 * time.Millisecond})
	fmt.Println(errors.Is(err, mcp.ErrTimeout), errors.Is(err, context.DeadlineExceeded))

	ctx2, cancel := context.WithCancel(ctx)
	_, err = c.CallTool(ctx2, "slow", map[string]any{"ms": 60000}, &mcp.CallOptions{
		OnProgress: func(mcp.Progress) { cancel() }, // the tool reports progress once it has started
	})
	fmt.Println(errors.Is(err, mcp.ErrCancelled), errors.Is(err, context.Canceled))

	res, _ := c.CallTool(ctx, "echo", map[string]any{"text": "still serving"}, nil)
	fmt.Println(res.Text())
	// Output:
	// true true
	// true true
	// still serving
}

func ExampleClient_ListTools() {
	server := mcptest.NewServer(nil)
	defer server.Close()
	ctx := context.Background()
	c, err := mcp.Connect(ctx, server.Transport(), &mcp.ClientOptions{ProtocolVersion: mcp.Version20251125})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	tools, err := c.ListTools(ctx, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(tools[0].Name, "-", tools[0].Description)
	// Output: echo - Returns its text.
}
