package node

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"

	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/egress"
)

// MCPHTTPClient returns the HTTP client of each MCP server reached by URL,
// for [catalogue.Options].HTTPClient: an egress client, so that every
// request is vetted against SSRF, gets the server's credential only on its
// way out, and leaves one audit row under its run. base gives what every
// server's egress shares (Audit, Secrets, Logger; AllowedHosts, a
// Resolver); the server's URL host is added to its allowlist — the operator
// named it — and its Purpose is "mcp NAME".
func MCPHTTPClient(base egress.Config) func(ctx context.Context, s catalogue.Server) (*http.Client, error) {
	return func(ctx context.Context, s catalogue.Server) (*http.Client, error) {
		u, err := url.Parse(s.URL)
		if err != nil {
			// The parser's message quotes the URL, and with it any secret.
			return nil, errors.New("invalid url")
		}
		cfg := base
		cfg.Purpose = "mcp " + s.Name
		cfg.AllowedHosts = append(slices.Clone(base.AllowedHosts), u.Hostname())
		// The MCP client caps messages itself; a response stream may carry
		// many of them.
		cfg.MaxResponseBytes = -1
		cfg.Credential = s.Credential
		if s.Credential == "" {
			cfg.Secrets = nil
		}
		return egress.NewClient(ctx, &cfg)
	}
}
