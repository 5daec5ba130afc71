package interop

import (
	"context"
	"fmt"
	"strconv"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
)

// newMCPGoServer returns an mcp-go v1.2.1 server with the same tools as
// newGoSDKServer: echo, slow (reports its events to sink) and progress.
func newMCPGoServer(sink *eventSink) *mcpgoserver.MCPServer {
	s := mcpgoserver.NewMCPServer("interop-mcpgo", "1", mcpgoserver.WithToolCapabilities(false))
	s.AddTool(mcpgo.NewTool("echo",
		mcpgo.WithDescription("Returns its text."),
		mcpgo.WithString("text"),
	), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText(req.GetString("text", "")), nil
	})
	s.AddTool(mcpgo.NewTool("slow",
		mcpgo.WithDescription("Sleeps, honouring cancellation, and reports what it did."),
		mcpgo.WithString("tag", mcpgo.Required()),
		mcpgo.WithNumber("ms"),
	), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		tag := req.GetString("tag", "")
		ms := req.GetInt("ms", 0)
		if ms <= 0 {
			ms = 60000
		}
		sink.emit(evStarted, tag, time.Now())
		t := time.NewTimer(time.Duration(ms) * time.Millisecond)
		defer t.Stop()
		select {
		case <-ctx.Done():
			sink.emit(evCancelled, tag, time.Now())
			return nil, ctx.Err()
		case <-t.C:
			sink.emit(evFinished, tag, time.Now())
			return mcpgo.NewToolResultText("slept " + strconv.Itoa(ms) + "ms"), nil
		}
	})
	s.AddTool(mcpgo.NewTool("progress",
		mcpgo.WithDescription("Reports count progress steps, then answers."),
		mcpgo.WithNumber("count"),
		mcpgo.WithNumber("interval_ms"),
	), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		count := req.GetInt("count", 0)
		if count <= 0 {
			count = 3
		}
		interval := time.Duration(req.GetInt("interval_ms", 0)) * time.Millisecond
		var token mcpgo.ProgressToken
		if req.Params.Meta != nil {
			token = req.Params.Meta.ProgressToken
		}
		for i := 1; i <= count; i++ {
			if interval > 0 {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(interval):
				}
			}
			if token == nil {
				continue
			}
			err := mcpgoserver.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress", map[string]any{
				"progressToken": token,
				"progress":      i,
				"total":         count,
				"message":       fmt.Sprintf("step %d of %d", i, count),
			})
			if err != nil {
				return mcpgo.NewToolResultError("sending progress: " + err.Error()), nil
			}
		}
		return mcpgo.NewToolResultText("progress done"), nil
	})
	return s
}
