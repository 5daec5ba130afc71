package api

import (
	"context"
	"net/http"
	"net/url"
)

// Servers lists the configured MCP servers.
func (c *Client) Servers(ctx context.Context) ([]MCPServer, error) {
	var out struct {
		Servers []MCPServer `json:"servers"`
	}
	return out.Servers, c.do(ctx, http.MethodGet, "/v1/servers", nil, &out)
}

// Tools lists the imported tools of server, or of every server if server
// is empty.
func (c *Client) Tools(ctx context.Context, server string) ([]Tool, error) {
	path := "/v1/tools"
	if server != "" {
		path += "?" + url.Values{"server": {server}}.Encode()
	}
	var out struct {
		Tools []Tool `json:"tools"`
	}
	return out.Tools, c.do(ctx, http.MethodGet, path, nil, &out)
}

// ImportServer lists the server's tools again and returns them.
func (c *Client) ImportServer(ctx context.Context, server string) ([]Tool, error) {
	var out struct {
		Tools []Tool `json:"tools"`
	}
	return out.Tools, c.do(ctx, http.MethodPost, "/v1/servers/"+url.PathEscape(server)+"/import", nil, &out)
}

// PatchTool changes an operator's setting of the tool offered as name and
// returns the tool as it is now.
func (c *Client) PatchTool(ctx context.Context, name string, p *ToolPatch) (*Tool, error) {
	var t Tool
	return &t, c.do(ctx, http.MethodPatch, "/v1/tools/"+url.PathEscape(name), p, &t)
}
