package mcptest

import (
	"context"
	"testing"

	"github.com/andonhq/andon/mcp"
)

// Client connects a new client to s in-process, for a test. It fails the
// test if the connection cannot be made, and closes the client when the test
// ends. A nil opts is the zero mcp.ClientOptions.
func (s *Server) Client(tb testing.TB, opts *mcp.ClientOptions) *mcp.Client {
	tb.Helper()
	c, err := mcp.Connect(context.Background(), s.Transport(), opts)
	if err != nil {
		tb.Fatalf("mcptest: connecting: %v", err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}
