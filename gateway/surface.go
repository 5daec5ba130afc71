package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp"
)

// ListResources lists the resources of the catalogue's servers, under
// their own URIs; where two servers offer one URI, the first server in
// andon.yaml serves it.
func (g *Gateway) ListResources(ctx context.Context, peer *mcp.Peer) ([]mcp.Resource, error) {
	list, err := g.resources(ctx)
	if err != nil {
		g.logger.Warn("gateway: listing resources failed", "session", peer.Session, "error", err)
		return nil, &mcp.RPCError{Code: mcp.CodeInternalError, Message: "andon could not list its servers' resources; see its log"}
	}
	out := make([]mcp.Resource, 0, len(list))
	for _, r := range list {
		out = append(out, r.Resource)
	}
	return out, nil
}

// resources lists the catalogue's resources and remembers which server
// offers each URI.
func (g *Gateway) resources(ctx context.Context) ([]catalogue.ServerResource, error) {
	list, err := g.cat.Resources(ctx)
	if err != nil {
		return nil, err
	}
	byURI := make(map[string]string, len(list))
	kept := list[:0]
	for _, r := range list {
		if _, dup := byURI[r.URI]; dup {
			continue
		}
		byURI[r.URI] = r.Server
		kept = append(kept, r)
	}
	g.mu.Lock()
	g.resourceServer = byURI
	g.mu.Unlock()
	return kept, nil
}

// ReadResource reads uri from the server that listed it.
func (g *Gateway) ReadResource(ctx context.Context, peer *mcp.Peer, uri string) (*mcp.ReadResourceResult, error) {
	g.mu.Lock()
	server, ok := g.resourceServer[uri]
	g.mu.Unlock()
	if !ok { // not listed yet by this process: list, then look again
		if _, err := g.resources(ctx); err != nil {
			return nil, &mcp.RPCError{Code: mcp.CodeInternalError, Message: "andon could not list its servers' resources; see its log"}
		}
		g.mu.Lock()
		server, ok = g.resourceServer[uri]
		g.mu.Unlock()
	}
	if !ok {
		return nil, resourceNotFound(peer, uri)
	}
	res, err := g.cat.ReadResource(ctx, server, uri)
	return res, upstreamError(err)
}

// resourceNotFound is the error for a URI no server offers: -32002 up to
// 2025-11-25; on 2026-07-28, which must not send it, -32602 naming the
// URI in its data.
func resourceNotFound(peer *mcp.Peer, uri string) error {
	msg := fmt.Sprintf("no server of andon's offers resource %q", uri)
	if peer.ProtocolVersion == mcp.Version20260728 {
		data, _ := json.Marshal(map[string]string{"uri": uri})
		return &mcp.RPCError{Code: mcp.CodeInvalidParams, Message: msg, Data: data}
	}
	return &mcp.RPCError{Code: mcp.CodeResourceNotFound, Message: msg}
}

// ListPrompts lists the prompts of the catalogue's servers under their
// local names (mcp_<server>_<prompt>).
func (g *Gateway) ListPrompts(ctx context.Context, peer *mcp.Peer) ([]mcp.Prompt, error) {
	list, err := g.cat.Prompts(ctx)
	if err != nil {
		g.logger.Warn("gateway: listing prompts failed", "session", peer.Session, "error", err)
		return nil, &mcp.RPCError{Code: mcp.CodeInternalError, Message: "andon could not list its servers' prompts; see its log"}
	}
	out := make([]mcp.Prompt, 0, len(list))
	for _, p := range list {
		out = append(out, p.Prompt)
	}
	return out, nil
}

// GetPrompt renders the prompt of that local name on its server.
func (g *Gateway) GetPrompt(ctx context.Context, peer *mcp.Peer, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	res, err := g.cat.GetPrompt(ctx, name, args)
	if errors.Is(err, catalogue.ErrUnknownPrompt) {
		return nil, &mcp.RPCError{Code: mcp.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", name)}
	}
	return res, upstreamError(err)
}

// Complete completes an argument of a prompt (under its local name) on
// its server. Resource templates are not forwarded, so neither are their
// completions.
func (g *Gateway) Complete(ctx context.Context, peer *mcp.Peer, req mcp.CompleteRequest) (*mcp.Completion, error) {
	if req.Ref.Type != "ref/prompt" {
		return nil, &mcp.RPCError{Code: mcp.CodeInvalidParams, Message: "andon's gateway completes prompts' arguments only (ref/prompt)"}
	}
	c, err := g.cat.CompletePrompt(ctx, req.Ref.Name, req)
	if errors.Is(err, catalogue.ErrUnknownPrompt) {
		return nil, &mcp.RPCError{Code: mcp.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", req.Ref.Name)}
	}
	return c, upstreamError(err)
}

// upstreamError is what the client is told of an upstream failure: the
// server's own refusal as it came (its code and message), anything else
// (a connection, a budget) only as a failure of andon's, logged there.
func upstreamError(err error) error {
	if err == nil {
		return nil
	}
	var re *mcp.RPCError
	if errors.As(err, &re) {
		return re
	}
	return &mcp.RPCError{Code: mcp.CodeInternalError, Message: "the upstream server could not be reached or did not answer in its budget"}
}
