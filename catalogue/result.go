package catalogue

import (
	"context"
	"sync"

	"github.com/andonhq/andon/mcp"
)

type resultKey struct{}

// resultSink holds the MCP result of one tool call.
type resultSink struct {
	mu  sync.Mutex
	res *mcp.CallToolResult
}

func (s *resultSink) set(res *mcp.CallToolResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.res = res
}

func (s *resultSink) get() *mcp.CallToolResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.res
}

// WithCallResult returns a context for a tool call (made under it, through
// any layers that pass the context on, such as agent.Runtime.Call) that
// keeps the whole MCP result its server answered — content blocks,
// structured content, _meta — beside the text a model reads
// ([agent.ToolResult]), and the func that returns it once the call has
// ended: nil if the server gave no result (the call failed, was
// cancelled, or was not made). A gateway hands it to its own client as it
// came.
func WithCallResult(ctx context.Context) (context.Context, func() *mcp.CallToolResult) {
	sink := &resultSink{}
	return context.WithValue(ctx, resultKey{}, sink), sink.get
}
