package gateway_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
	"github.com/andonhq/andon/node"
	"github.com/andonhq/andon/vault"
)

// An MCP client calls a tool of andon's catalogue through the gateway: the
// call is a run of andon's runtime, recorded, budgeted and stoppable from
// the console, and the client gets the upstream server's result as it came.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "gateway-example")
	defer os.RemoveAll(dir)
	key, _ := vault.NewKey()

	upstream := mcptest.NewServer(nil) // an MCP server, in process
	defer upstream.Close()
	n, err := node.New(ctx, &node.Config{DB: filepath.Join(dir, "andon.db"), Key: key,
		Servers: &catalogue.Config{Servers: []catalogue.Server{{Name: "s", Command: []string{"in-process"},
			RequiresApproval: new(false), Effects: map[string]agent.Effect{"echo": agent.EffectReadOnly}}}},
		Dial: func(context.Context, catalogue.Server) (mcp.Transport, error) { return upstream.Transport(), nil },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer n.Close()

	// The gateway on a stream, as `andon gateway --stdio` serves it.
	clientEnd, gatewayEnd := net.Pipe()
	served := make(chan error, 1)
	go func() { served <- n.Gateway().ServeStream(ctx, gatewayEnd, gatewayEnd) }()
	c, err := mcp.Connect(ctx, mcp.Stream(clientEnd), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := c.CallTool(ctx, "mcp_s_echo", map[string]any{"text": "hello through andon"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Text())
	c.Close()
	gatewayEnd.Close()
	<-served
	// Output: hello through andon
}
