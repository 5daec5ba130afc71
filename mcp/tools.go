package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// ListTools returns every tool the server offers, following pagination up
// to ClientOptions.MaxPages pages. opts applies to each page's request.
func (c *Client) ListTools(ctx context.Context, opts *CallOptions) ([]Tool, error) {
	var tools []Tool
	cursor := ""
	seen := map[string]bool{}
	var hint listingHint
	for page := 0; ; page++ {
		if page == c.opts.MaxPages {
			return nil, fmt.Errorf("mcp: tools/list: more than %d pages", c.opts.MaxPages)
		}
		var res struct {
			resultKind
			pageHint
			Tools      []Tool `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if err := c.request(ctx, "tools/list", &listParams{Cursor: cursor}, opts, false, &res); err != nil {
			return nil, err
		}
		c.noteTaskSupport(res.Tools)
		hint.add(res.pageHint)
		tools = append(tools, c.admitTools(res.Tools)...)
		if res.NextCursor == "" {
			c.finishListing("tools", &hint)
			return tools, nil
		}
		if seen[res.NextCursor] {
			return nil, &ProtocolError{Reason: fmt.Sprintf("tools/list: cursor %q repeats", res.NextCursor)}
		}
		seen[res.NextCursor] = true
		cursor = res.NextCursor
	}
}

// CallTool calls the tool name with args, which must encode to a JSON object
// (a struct, a map, or json.RawMessage); nil sends no arguments.
//
// The call ends when the server answers, when ctx is cancelled (an error
// matching [ErrCancelled] and [context.Canceled]), or when a deadline passes
// (an error matching [ErrTimeout] and [context.DeadlineExceeded]); if both
// happen, cancellation wins. An interrupted call is abandoned at once: the
// server is told as its transport and revision require, and a reply that
// comes later is dropped. A tool that fails is a result with IsError set,
// not an error.
//
// A call may become a task (see [Task]): on 2025-11-25 a tool whose
// TaskSupport is "required" (or "optional", with [CallOptions].Task) runs
// as one (a tool the client has not listed yet is looked up first with
// tools/list); on 2026-07-28 the server decides. CallTool then follows the
// task as [Client.FollowTask] does and returns its result as if the call
// had answered it: the call's Timeout (or the client's RequestTimeout) and
// MaxTotalTimeout bound the whole task, and an interrupted one is
// cancelled with tasks/cancel, never notifications/cancelled. Progress
// reaches OnProgress until the task ends (2025-11-25; 2026-07-28 has no
// progress for tasks).
func (c *Client) CallTool(ctx context.Context, name string, args any, opts *CallOptions) (*CallToolResult, error) {
	if ctx.Err() != nil {
		return nil, interruption("tools/call", ctx)
	}
	params := &callToolParams{Name: name}
	if args != nil {
		raw, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("mcp: encoding arguments of %q: %w", name, err)
		}
		if len(raw) == 0 || raw[0] != '{' {
			return nil, fmt.Errorf("mcp: arguments of %q must be a JSON object, not %.20s", name, raw)
		}
		params.Arguments = raw
	}
	if _, routed := c.conn.(headerRouted); routed && c.rev.routingHeaders {
		c.mu.Lock()
		decls := c.params[name]
		c.mu.Unlock()
		ctx = withCallRouting(ctx, name, paramHeaderValues(decls, params.Arguments))
	}
	if gen := c.taskGeneration(); gen != noTasks {
		return c.callToolTask(ctx, params, opts, gen)
	}
	var res toolResult
	if err := c.request(ctx, "tools/call", params, opts, false, &res); err != nil {
		return nil, err
	}
	if res.Content == nil {
		res.Content = []Content{}
	}
	return &res.CallToolResult, nil
}

// Ping checks that the server is responsive. The ping method exists only in
// handshake-era revisions; on 2026-07-28 Ping returns an error matching
// [errors.ErrUnsupported] without sending anything.
func (c *Client) Ping(ctx context.Context, opts *CallOptions) error {
	if !c.rev.ping {
		return fmt.Errorf("mcp: ping does not exist in revision %s: %w", c.rev.name, errors.ErrUnsupported)
	}
	return c.request(ctx, "ping", &emptyParams{}, opts, false, &resultKind{})
}

// admitTools remembers the x-mcp-header annotations of listed tools and, on
// 2026-07-28, drops (with a warning) a tool whose annotations are invalid,
// as the spec requires: calling it could not be done right.
func (c *Client) admitTools(tools []Tool) []Tool {
	if !c.rev.routingHeaders {
		return tools
	}
	kept := tools[:0]
	for _, t := range tools {
		decls, err := scanParamHeaders(t.InputSchema)
		if err != nil {
			c.logger.Warn("mcp: leaving out a tool with an invalid x-mcp-header", "tool", t.Name, "reason", err.Error())
			continue
		}
		c.mu.Lock()
		c.params[t.Name] = decls
		c.mu.Unlock()
		kept = append(kept, t)
	}
	return kept
}
