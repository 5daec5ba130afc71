package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// The roots a client offers can change while it is connected: the server
// is told (notifications/roots/list_changed) and gets the new roots when it
// asks. mcptest's ask tool asks for them.
func ExampleClient_SetRoots() {
	server := mcptest.NewServer(nil)
	defer server.Close()
	ctx := context.Background()
	c, err := mcp.Connect(ctx, server.Transport(), &mcp.ClientOptions{
		ProtocolVersion: mcp.Version20251125,
		Roots:           []mcp.Root{{URI: "file:///old"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	if err := c.SetRoots(ctx, []mcp.Root{{URI: "file:///new"}}); err != nil {
		fmt.Println(err)
		return
	}
	res, err := c.CallTool(ctx, "ask", nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Text())
	// Output: roots: {"roots":[{"uri":"file:///new"}]}
}

// A 2026-07-28 server says how long a listing stays fresh; a caller that
// keeps what it listed asks the hint before listing again.
func ExampleClient_ListCacheHint() {
	server := mcptest.NewServer(&mcptest.Options{ListTTL: time.Minute, ListCacheScope: "public"})
	defer server.Close()
	ctx := context.Background()
	c, err := mcp.Connect(ctx, server.Transport(), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	for _, err := range c.ListResources(ctx, nil) {
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	hint, _ := c.ListCacheHint("resources")
	fmt.Println(hint.TTL, hint.Scope, hint.Fresh(time.Now()))
	// Output: 1m0s public true
}

// On 2026-07-28 a client hears of changes on a subscriptions/listen stream
// it holds open; cancelling its context closes the stream on the wire.
func ExampleClient_Listen() {
	server := mcptest.NewServer(nil)
	defer server.Close()
	ctx := context.Background()
	changed := make(chan string, 1)
	c, err := mcp.Connect(ctx, server.Transport(), &mcp.ClientOptions{OnListChanged: func(list string) { changed <- list }})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	listenCtx, stop := context.WithCancel(ctx)
	acked, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- c.Listen(listenCtx, mcp.SubscriptionFilter{ToolsListChanged: true}, func(mcp.SubscriptionFilter) { close(acked) })
	}()
	<-acked
	c.ReadResource(ctx, "mcptest://change/tools", nil) // mcptest announces a change
	fmt.Println(<-changed)
	stop()
	fmt.Println(errors.Is(<-done, mcp.ErrCancelled))
	// Output:
	// tools
	// true
}
