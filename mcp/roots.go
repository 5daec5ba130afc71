package mcp

import (
	"context"
	"errors"
	"fmt"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
)

// errNoRoots reports a SetRoots on a client that did not declare the roots
// capability: capabilities are fixed when the client connects.
var errNoRoots = errors.New("mcp: the client did not declare roots (ClientOptions.Roots is nil), so it cannot change them")

// SetRoots replaces the roots the client offers the server: every later
// roots/list (or, on 2026-07-28, roots input request) gets roots. On
// handshake-era revisions the server is then told with
// notifications/roots/list_changed, so that it can ask again; 2026-07-28
// has no such notification (a stateless server asks in each request that
// needs them), and nothing is sent. A client connected without
// [ClientOptions].Roots has not declared the capability and cannot gain it:
// SetRoots then returns an error matching [errors.ErrUnsupported].
//
// ctx bounds sending the notification. A ctx already ended sends nothing
// and returns an error matching [ErrCancelled] or [ErrTimeout]; the roots
// are replaced all the same, since the server may ask for them at any time.
func (c *Client) SetRoots(ctx context.Context, roots []Root) error {
	if c.opts.Roots == nil {
		return fmt.Errorf("%w: %w", errNoRoots, errors.ErrUnsupported)
	}
	if roots == nil {
		roots = []Root{} // still declared: an empty list, not "none"
	}
	roots = append([]Root(nil), roots...)
	c.mu.Lock()
	c.roots = roots
	c.mu.Unlock()
	if !c.rev.ping { // notifications/roots/list_changed went with the handshake era, as ping did
		return nil
	}
	if ctx.Err() != nil {
		return interruption("notifications/roots/list_changed", ctx)
	}
	if err := c.err(); err != nil {
		return err
	}
	if err := c.conn.send(ctx, &jsonrpc.Message{Method: "notifications/roots/list_changed"}); err != nil {
		if ctx.Err() != nil {
			return interruption("notifications/roots/list_changed", ctx)
		}
		return fmt.Errorf("mcp: sending notifications/roots/list_changed: %w", err)
	}
	return nil
}

// currentRoots returns the roots the client offers now.
func (c *Client) currentRoots() []Root {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.roots != nil {
		return c.roots
	}
	return c.opts.Roots
}
