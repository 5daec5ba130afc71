package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/andonhq/andon/mcp/internal/wwwauth"
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
	// ContentType is the media type of a successful (2xx) response, such
	// as "text/html" for a web page where an MCP endpoint was expected;
	// empty when it had none (or an unreadable one), and for other
	// statuses.
	ContentType string
}

// Error names the request's JSON-RPC method and the HTTP status.
func (e *HTTPError) Error() string {
	if e.StatusCode/100 != 2 || e.ContentType == "application/json" || e.ContentType == "text/event-stream" {
		return fmt.Sprintf("mcp: %s: HTTP %s", e.Method, e.Status)
	}
	ct := "no readable Content-Type"
	if e.ContentType != "" {
		ct = "Content-Type " + e.ContentType
	}
	return fmt.Sprintf("mcp: %s: HTTP %s with %s: this does not look like an MCP endpoint, "+
		"which answers with application/json or text/event-stream; check the URL", e.Method, e.Status, ct)
}

// OAuthRequiredError reports an HTTP 401 whose WWW-Authenticate challenge
// names the server's protected resource metadata: the server wants an
// OAuth access token (the MCP authorization spec). Reach it through an
// HTTP client that gets one, such as mcp/oauth's Transport. It wraps the
// *HTTPError, so errors.As finds either.
type OAuthRequiredError struct {
	HTTP *HTTPError
	// ResourceMetadata is the URL of the server's protected resource
	// metadata (RFC 9728), as the challenge gave it. It is never part of
	// the error's text: it is a header's value.
	ResourceMetadata string
}

// Error says that the server wants OAuth and how to connect; never the
// metadata's URL.
func (e *OAuthRequiredError) Error() string {
	return e.HTTP.Error() + ": the server requires OAuth authorization (its challenge names protected resource metadata); " +
		"connect with an HTTP client that obtains a token, such as mcp/oauth's Transport"
}

// Unwrap returns the HTTP error of the 401.
func (e *OAuthRequiredError) Unwrap() error { return e.HTTP }

// statusError is the error of a response to method that carries no
// JSON-RPC message: an *OAuthRequiredError for an OAuth challenge, else an
// *HTTPError.
func statusError(method string, resp *http.Response) error {
	e := &HTTPError{Method: method, StatusCode: resp.StatusCode, Status: resp.Status}
	if resp.StatusCode/100 == 2 {
		e.ContentType = contentMediaType(resp.Header.Get("Content-Type"))
		if len(e.ContentType) > 64 {
			e.ContentType = "" // a media type that long says nothing useful
		}
	}
	if err := oauthRequired(e, resp); err != nil {
		return err
	}
	return e
}

// oauthRequired returns an *OAuthRequiredError for e if resp, a 401,
// carries an OAuth challenge naming protected resource metadata, or nil.
func oauthRequired(e *HTTPError, resp *http.Response) error {
	if resp.StatusCode != http.StatusUnauthorized {
		return nil
	}
	params, ok := wwwauth.Bearer(resp.Header)
	md, named := params["resource_metadata"]
	if !ok || !named {
		return nil
	}
	return &OAuthRequiredError{HTTP: e, ResourceMetadata: md}
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
