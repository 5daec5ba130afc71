package node

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"sync"

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
//
// A server with auth: oauth gets an OAuth client over egress
// ([catalogue.NewOAuthTransport]), non-interactive, with the tokens in the
// vault (base.Secrets, which must then be a [*vault.Vault] or another
// [catalogue.OAuthVault]); one per server, so that its calls share one
// token and one refresh across reconnections.
func MCPHTTPClient(base egress.Config) func(ctx context.Context, s catalogue.Server) (*http.Client, error) {
	var mu sync.Mutex
	oauthClients := map[string]*http.Client{} // by name and URL
	return func(ctx context.Context, s catalogue.Server) (*http.Client, error) {
		if s.Auth == catalogue.AuthOAuth {
			mu.Lock()
			defer mu.Unlock()
			key := s.Name + "\x00" + s.URL + "\x00" + s.ClientID + "\x00" + s.ClientCredentials
			if c := oauthClients[key]; c != nil {
				return c, nil
			}
			v, ok := base.Secrets.(catalogue.OAuthVault)
			if !ok {
				return nil, errors.New("auth: oauth needs the vault for its tokens")
			}
			t, err := catalogue.NewOAuthTransport(ctx, s, &catalogue.OAuthSetup{Egress: base, Vault: v})
			if err != nil {
				return nil, err
			}
			c := &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			oauthClients[key] = c
			return c, nil
		}
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
