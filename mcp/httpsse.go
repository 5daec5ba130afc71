package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
	"github.com/andonhq/andon/mcp/internal/sse"
)

// legacySSE is the HTTP+SSE transport of 2024-11-05: one GET event stream
// carries everything the server sends, and the client POSTs its messages to
// the endpoint the stream names first. There is no per-request stream to
// close, so a call is cancelled by notification only.
type legacySSE struct {
	c        *httpConn
	endpoint *url.URL
}

// fallBackToLegacySSE runs when a server refuses the Streamable HTTP
// initialize: it opens the GET stream and, if the server names an endpoint
// there, switches the connection to HTTP+SSE and re-sends initialize.
func (c *httpConn) fallBackToLegacySSE(ctx context.Context, m *jsonrpc.Message, body []byte, refused *http.Response) {
	refused.Body.Close()
	l, err := c.openLegacySSE(ctx)
	if err != nil {
		c.failRequest(ctx, m, fmt.Errorf("%w (and not an HTTP+SSE server either: %w)",
			&HTTPError{Method: m.Method, StatusCode: refused.StatusCode, Status: refused.Status}, err))
		return
	}
	c.cfg.logger.Debug("mcp: server speaks HTTP+SSE (2024-11-05)", "endpoint", redactedURL(l.endpoint))
	if err := l.post(ctx, m, body); err != nil {
		c.failRequest(ctx, m, err)
	}
}

// openLegacySSE opens the GET stream and waits, under ctx, for the endpoint
// event. The stream itself lives as long as the connection.
func (c *httpConn) openLegacySSE(ctx context.Context) (*legacySSE, error) {
	req, err := http.NewRequestWithContext(c.ctx, http.MethodGet, c.url.String(), nil)
	if err != nil {
		return nil, err
	}
	c.setHeaders(req, nil)
	req.Header.Set("Accept", "text/event-stream")
	type opened struct {
		l   *legacySSE
		r   *sse.Reader
		err error
	}
	done := make(chan opened, 1)
	var body io.ReadCloser
	go func() {
		resp, err := c.client.Do(req)
		if err != nil {
			done <- opened{err: c.transportError(err)}
			return
		}
		body = resp.Body
		mediaType := contentMediaType(resp.Header.Get("Content-Type"))
		if resp.StatusCode != http.StatusOK || mediaType != "text/event-stream" {
			resp.Body.Close()
			err := fmt.Errorf("GET: HTTP %s, %s", resp.Status, mediaType)
			if auth := oauthRequired(&HTTPError{Method: "GET", StatusCode: resp.StatusCode, Status: resp.Status}, resp); auth != nil {
				err = auth
			}
			done <- opened{err: err}
			return
		}
		r := sse.NewReader(resp.Body, c.cfg.maxMessageSize)
		ev, err := r.Next()
		if err != nil || ev.Type != "endpoint" {
			resp.Body.Close()
			done <- opened{err: fmt.Errorf("the first event is not an endpoint (%v)", err)}
			return
		}
		endpoint, err := c.url.Parse(strings.TrimSpace(string(ev.Data)))
		if err != nil || endpoint.Scheme != c.url.Scheme || endpoint.Host != c.url.Host {
			resp.Body.Close()
			done <- opened{err: errors.New("the endpoint event names another origin; refusing to send there")}
			return
		}
		done <- opened{l: &legacySSE{c: c, endpoint: endpoint}, r: r}
	}()
	var o opened
	select {
	case o = <-done:
	case <-ctx.Done():
		// Abandoned while connecting: the GET must not outlive the attempt.
		go func() {
			if o := <-done; o.err == nil {
				body.Close()
			}
		}()
		return nil, ctx.Err()
	}
	if o.err != nil {
		return nil, o.err
	}
	c.mu.Lock()
	c.legacySSE = o.l
	c.mu.Unlock()
	if !c.goTracked(func() {
		defer body.Close()
		o.l.readStream(o.r)
	}) {
		body.Close()
		return nil, ErrClosed
	}
	return o.l, nil
}

// readStream delivers every message event of the GET stream until it ends,
// which ends the connection.
func (l *legacySSE) readStream(r *sse.Reader) {
	err := l.c.pump(r)
	if l.c.ctx.Err() == nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("server closed the event stream")
		}
		l.c.cfg.receiver.lost(err)
	}
}

// post sends one message to the endpoint. The reply carries nothing (the
// response, if any, comes on the stream) and is discarded unread.
//
// The POST runs under the connection's context, not the caller's: in this
// generation closing it signals nothing, and a caller that gives up must
// not abort a connection that other POSTs may share.
//
// A request's POST is not waited for: its response comes on the stream,
// and a POST that fails fails the request through the receiver, so the
// caller waits for one hand-off (the response) instead of two in a row.
// What the wait kept — a cancellation never overtakes its request — is
// kept by abandonUnsent, which holds the notification back until the
// request's POST has returned (see exchangeState.postOnly). A
// notification or a response is still waited for, and the caller gets
// control back as soon as ctx ends.
func (l *legacySSE) post(ctx context.Context, m *jsonrpc.Message, body []byte) error {
	// Nothing but the connection's end ends it: it needs no cancel of
	// its own (see connScoped).
	postCtx := connScoped(l.c.ctx, ctx)
	if m.IsRequest() {
		return l.postRequest(postCtx, m, body)
	}
	done := make(chan error, 1)
	if !l.c.goTracked(func() {
		done <- l.do(postCtx, m, body, nil)
	}) {
		return fmt.Errorf("%w: %w", errNotSent, ErrClosed)
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// postRequest starts a request's POST and returns. Until the POST returns,
// the request is in streams, so that abandonUnsent can wait for it.
func (l *legacySSE) postRequest(ctx context.Context, m *jsonrpc.Message, body []byte) error {
	x := &exchangeState{cancel: keepPosting, posted: make(chan struct{}), postOnly: true}
	l.c.mu.Lock()
	l.c.streams[m.ID] = x
	l.c.mu.Unlock()
	if !l.c.goTracked(func() {
		err := l.do(ctx, m, body, &x.wrote)
		l.c.mu.Lock()
		if l.c.streams[m.ID] == x {
			delete(l.c.streams, m.ID)
		}
		l.c.mu.Unlock()
		close(x.posted)
		if err != nil {
			l.c.cfg.receiver.fail(m.ID, err)
		}
	}) {
		l.c.abandon(m.ID, ErrClosed)
		return fmt.Errorf("%w: %w", errNotSent, ErrClosed)
	}
	return nil
}

// keepPosting is an HTTP+SSE request's cancel: abandoning the request
// leaves its POST alone (see post).
func keepPosting(error) {}

// do POSTs m. wrote, if set, is set once a byte of the body has gone to
// the connection.
func (l *legacySSE) do(ctx context.Context, m *jsonrpc.Message, body []byte, wrote *atomic.Bool) error {
	ctx, r := l.c.requestBody(ctx, body, wrote)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.endpoint.String(), r)
	if err != nil {
		return err
	}
	if _, inMemory := r.(*bytes.Reader); !inMemory {
		// What NewRequest sets for a *bytes.Reader: the same
		// Content-Length on the wire, not a chunked body.
		req.ContentLength = int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	l.c.setHeaders(req, m)
	resp, err := l.c.client.Do(req)
	if err != nil {
		return l.c.transportError(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return statusError(m.Method, resp)
	}
	return nil
}
