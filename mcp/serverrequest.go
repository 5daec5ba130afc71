package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
)

// handler returns the handler for a request the server makes of the client,
// or nil if the client has none.
func (c *Client) handler(method string) RequestHandler {
	switch method {
	case "ping":
		return func(context.Context, json.RawMessage) (any, error) { return struct{}{}, nil }
	case "roots/list":
		if c.opts.Roots == nil {
			return nil
		}
		return func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"roots": c.currentRoots()}, nil
		}
	case "sampling/createMessage":
		return c.opts.SamplingHandler
	case "elicitation/create":
		return c.opts.ElicitationHandler
	}
	return nil
}

// serveRequest answers a request from the server (handshake-era revisions)
// on its own goroutine, so that a slow handler never stalls the reader. The
// handler's context ends when the server cancels the request, the client
// closes, or within ends (the request it arrived with was abandoned); a
// cancelled request gets no response. Only within's cancellation is kept,
// not its values.
func (c *Client) serveRequest(within context.Context, m *jsonrpc.Message) {
	ctx, cancel := context.WithCancel(context.Background())
	stopAfter := context.AfterFunc(within, cancel)
	key := m.ID.String()
	c.mu.Lock()
	c.serving[key] = cancel
	c.mu.Unlock()
	started := c.goBackground(func() {
		defer func() {
			c.mu.Lock()
			delete(c.serving, key)
			c.mu.Unlock()
			stopAfter()
			cancel()
		}()
		resp := &jsonrpc.Message{ID: m.ID}
		result, err := c.handle(ctx, m.Method, m.Params)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			resp.Error = toWireError(err)
		} else {
			resp.Result = result
		}
		if err := c.conn.send(ctx, resp); err != nil {
			c.logger.Warn("mcp: could not answer server request", "method", m.Method, "error", err)
		}
	})
	if !started {
		c.mu.Lock()
		delete(c.serving, key)
		c.mu.Unlock()
		stopAfter()
		cancel()
	}
}

// handle runs the handler for method and encodes its result.
func (c *Client) handle(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	h := c.handler(method)
	if h == nil {
		return nil, &RPCError{Code: CodeMethodNotFound, Message: "method not found: " + method}
	}
	v, err := h(ctx, params)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding %s result: %w", method, err)
	}
	return raw, nil
}

func toWireError(err error) *jsonrpc.Error {
	var rpcErr *RPCError
	if errors.As(err, &rpcErr) {
		return &jsonrpc.Error{Code: rpcErr.Code, Message: rpcErr.Message, Data: rpcErr.Data}
	}
	return &jsonrpc.Error{Code: CodeInternalError, Message: err.Error()}
}

// answerInputRequests fulfils the input requests of a 2026-07-28
// input_required result, for the retry that carries inputResponses.
func (c *Client) answerInputRequests(ctx context.Context, requests map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	if len(requests) == 0 {
		return nil, nil
	}
	responses := make(map[string]json.RawMessage, len(requests))
	for key, raw := range requests {
		var req struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(raw, &req); err != nil || req.Method == "" {
			return nil, &ProtocolError{Reason: fmt.Sprintf("input request %q is malformed", key)}
		}
		if c.handler(req.Method) == nil || req.Method == "ping" {
			return nil, &ProtocolError{Reason: fmt.Sprintf("server asked for %s input, which the client did not declare", req.Method)}
		}
		result, err := c.handle(ctx, req.Method, req.Params)
		if err != nil {
			return nil, fmt.Errorf("mcp: answering %s input request: %w", req.Method, err)
		}
		responses[key] = result
	}
	return responses, nil
}
