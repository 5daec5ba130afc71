package mcptest

import (
	"context"

	"github.com/andonhq/andon/mcp"
)

// TB is the part of [testing.TB] that [Server.Client] uses; a *testing.T or
// *testing.B is one. It is an interface of mcptest's own so that programs
// embedding the server (andon's "mcptest serve") do not link the testing
// package.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Client connects a new client to s in-process, for a test. It fails the
// test if the connection cannot be made, and closes the client when the test
// ends. A nil opts is the zero mcp.ClientOptions.
func (s *Server) Client(tb TB, opts *mcp.ClientOptions) *mcp.Client {
	tb.Helper()
	c, err := mcp.Connect(context.Background(), s.Transport(), opts)
	if err != nil {
		tb.Fatalf("mcptest: connecting: %v", err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}
