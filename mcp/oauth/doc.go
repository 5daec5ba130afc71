// Package oauth is the OAuth 2.1 client of the mcp HTTP transport: the MCP
// authorization spec (2025-03-26 to 2026-07-28) as an [http.RoundTripper].
//
// A [Transport] wraps the round tripper the mcp client already uses. It adds
// the bearer token it holds for the MCP server (the resource) to every
// request, and when the server answers 401 (or 403 insufficient_scope) it
// discovers the server's Protected Resource Metadata (RFC 9728), the
// authorization server's metadata (RFC 8414, OpenID discovery, and the
// 2025-03-26 fallbacks), chooses a client registration (pre-registered,
// Client ID Metadata Document, or Dynamic Client Registration, RFC 7591),
// obtains a token (authorization code with PKCE S256 and the resource
// parameter of RFC 8707; or, with no user, client credentials or a JWT
// bearer assertion: workload identity, or an enterprise IdP's ID-JAG) and
// retries the request once
// the server has answered it, never after a connection failure: a request
// that may have been half-sent is not sent again.
//
//	t := &oauth.Transport{Store: oauth.NewMemoryStore(), Authorize: openBrowser}
//	c, err := mcp.Connect(ctx, mcp.HTTP(url, &http.Client{Transport: t}), nil)
//
// Every OAuth leg (metadata, registration, token) goes through
// [Transport].Base with the context of the request that needed it, so a
// caller's egress policy, budget and audit apply to it; URLs that came from
// metadata a server supplied pass [Transport].CheckURL before any request to
// them and before a client secret is read. Tokens, codes, client secrets and
// PKCE verifiers never appear in an error or a log line.
//
// Concurrent requests that need a new token share one token request (single
// flight). It runs on a context that keeps the callers' values but not one
// caller's cancellation: it ends when its bound passes or when every caller
// waiting on it has gone. A token is stored only once it is complete.
package oauth
