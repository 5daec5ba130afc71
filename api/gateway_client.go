package api

import (
	"context"
	"net/http"
	"net/url"
)

// ListGatewaySessions lists the MCP sessions with calls in flight through
// the gateway.
func (c *Client) ListGatewaySessions(ctx context.Context) ([]GatewaySession, error) {
	var res struct {
		Sessions []GatewaySession `json:"sessions"`
	}
	return res.Sessions, c.do(ctx, http.MethodGet, "/v1/gateway/sessions", nil, &res)
}

// CancelGatewaySession cancels every call in flight of a gateway session
// and returns the ids of the runs it cancelled.
func (c *Client) CancelGatewaySession(ctx context.Context, session string) ([]string, error) {
	var res struct {
		Cancelled []string `json:"cancelled"`
	}
	return res.Cancelled, c.do(ctx, http.MethodPost, "/v1/gateway/sessions/"+url.PathEscape(session)+"/cancel", nil, &res)
}
