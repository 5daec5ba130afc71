package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// HTTPTransport speaks MCP over HTTP, in whichever of the three HTTP
// generations the server understands:
//
//   - 2026-07-28, stateless Streamable HTTP: every request is its own POST;
//     a call is cancelled by closing its response stream, and nothing else
//     is sent.
//   - 2025-03-26 to 2025-11-25, Streamable HTTP with sessions: an initialize
//     handshake, an Mcp-Session-Id on every later request, and a call is
//     cancelled by POSTing notifications/cancelled and closing its response
//     stream.
//   - 2024-11-05, HTTP+SSE: a GET event stream that names an endpoint for
//     POSTs, responses on the stream; a call is cancelled by POSTing
//     notifications/cancelled.
//
// The generation follows from negotiation ([Connect]) or from
// [ClientOptions].ProtocolVersion. A server that refuses the Streamable
// HTTP handshake with 400, 404 or 405 is tried as an HTTP+SSE server.
//
// The transport never follows a redirect: a redirect could carry a
// credential to a host nobody vetted, so it is an error.
type HTTPTransport struct {
	// URL is the server's MCP endpoint.
	URL string
	// Client makes the requests. Nil means a client with
	// http.DefaultTransport. The transport uses a copy whose CheckRedirect
	// refuses redirects; everything else (its Transport, Jar, Timeout) is
	// the caller's. A Client.Timeout also cuts long response streams: leave
	// it zero and rely on the call timeouts instead.
	Client *http.Client
	// Header holds headers sent with every request, such as an
	// Authorization header. The transport's own headers take precedence.
	Header http.Header
	// CloseTimeout bounds the DELETE that ends a session when the client
	// closes. Zero means DefaultCloseTimeout.
	CloseTimeout time.Duration
}

// DefaultCloseTimeout bounds the session DELETE sent on close.
const DefaultCloseTimeout = 2 * time.Second

// HTTP returns a transport to the MCP endpoint at url, using client (nil
// for a default client).
func HTTP(url string, client *http.Client) *HTTPTransport {
	return &HTTPTransport{URL: url, Client: client}
}

// ErrSessionExpired reports that the server no longer knows the session
// (HTTP 404 on a request carrying Mcp-Session-Id). The client is closed;
// [Connect] again to start a new session.
var ErrSessionExpired = errors.New("mcp: session expired")

// HTTPError reports an HTTP response that is neither a JSON-RPC message
// nor an accepted notification.
type HTTPError struct {
	Method     string // the JSON-RPC method of the request
	StatusCode int
	Status     string
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("mcp: %s: HTTP %s", e.Method, e.Status)
}

// errRedirect is returned by the copied client's CheckRedirect.
var errRedirect = errors.New("redirect refused")

func (t *HTTPTransport) connect(ctx context.Context, cfg connConfig) (conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	u, err := url.Parse(t.URL)
	if err != nil {
		return nil, fmt.Errorf("mcp: invalid URL: %w", redactURLError(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("mcp: URL scheme %q is not http or https", u.Scheme)
	}
	client := &http.Client{}
	if t.Client != nil {
		c := *t.Client
		client = &c
	}
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return errRedirect }
	closeTimeout := t.CloseTimeout
	if closeTimeout <= 0 {
		closeTimeout = DefaultCloseTimeout
	}
	return newHTTPConn(u, client, t.Header.Clone(), closeTimeout, cfg), nil
}

// redactURLError removes the URL, which may hold a secret in its query or
// userinfo, from a url.Parse error.
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// redactedURL is u without userinfo and query, for errors and logs.
func redactedURL(u *url.URL) string {
	r := *u
	r.User, r.RawQuery, r.Fragment = nil, "", ""
	return r.String()
}
