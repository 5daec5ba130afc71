package mcp_test

import (
	"context"
	"testing"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

func TestSmoke(t *testing.T) {
	for _, v := range []string{"", mcp.Version20251125, mcp.Version20241105} {
		s := mcptest.NewServer(nil)
		c, err := mcp.Connect(context.Background(), s.Transport(), &mcp.ClientOptions{ProtocolVersion: v})
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.CallTool(context.Background(), "echo", map[string]any{"text": "hi"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(c.ProtocolVersion(), res.Text())
		c.Close()
		s.Close()
	}
}
