package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
	"github.com/andonhq/andon/mcp/internal/sse"
	"go.opentelemetry.io/otel/propagation"
)

// httpConn is a connection over HTTP. Each request is a POST whose
// response (JSON or an event stream) is read on its own goroutine, under a
// context of its own, so that abandoning the request closes exactly its
// stream. In HTTP+SSE mode (2024-11-05) responses come on one long GET
// stream instead.
type httpConn struct {
	url          *url.URL
	client       *http.Client
	header       http.Header
	closeTimeout time.Duration
	cfg          connConfig
	// tracesWrites: client's Transport reports a request's writes to its
	// ClientTrace (see requestBody).
	tracesWrites bool

	ctx    context.Context // the connection's life; never a caller's
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	rev       revision // negotiated, once known
	sessionID string
	legacySSE *legacySSE                    // set in HTTP+SSE mode
	streams   map[jsonrpc.ID]*exchangeState // requests in flight
	closed    bool

	// fixed holds the values of the headers every request carries;
	// guarded by mu (its session and version change once each).
	fixed fixedHeaders

	// readers holds the *sse.Reader of response streams that have ended,
	// for the next: a reader's 4 KiB buffer was most of what a Streamable
	// HTTP round trip allocated.
	readers sync.Pool
}

func newHTTPConn(u *url.URL, client *http.Client, header http.Header, closeTimeout time.Duration, cfg connConfig) *httpConn {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &httpConn{
		url: u, client: client, header: header, closeTimeout: closeTimeout, cfg: cfg,
		ctx: ctx, cancel: cancel,
		streams:      make(map[jsonrpc.ID]*exchangeState),
		fixed:        newFixedHeaders(),
		tracesWrites: reportsWrites(client.Transport),
	}
}

func (c *httpConn) start() {}

func (c *httpConn) negotiated(rev revision) {
	c.mu.Lock()
	c.rev = rev
	c.fixed.protocolVersion, c.fixed.versionName = []string{rev.name}, rev.name
	listen := c.cfg.serverRequests && rev.sessions && c.sessionID != "" && c.legacySSE == nil
	c.mu.Unlock()
	if listen {
		c.goTracked(c.listen)
	}
}

// listen opens the session's optional GET stream, on which a server sends
// requests and notifications that belong to no call of the client's (an
// elicitation, say), and delivers them until the stream or the connection
// ends. A server without one answers 405, which is fine. It is opened only
// for a client that answers server requests: some servers move a call's
// progress onto it when it exists, where it can overtake the call's result.
func (c *httpConn) listen() {
	req, err := http.NewRequestWithContext(c.ctx, http.MethodGet, c.url.String(), nil)
	if err != nil {
		return
	}
	c.setHeaders(req, nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.client.Do(req)
	if err != nil {
		if c.ctx.Err() == nil {
			c.cfg.logger.Debug("mcp: the session's GET stream could not be opened", "error", c.transportError(err))
		}
		return
	}
	defer resp.Body.Close()
	mediaType := contentMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != http.StatusOK || mediaType != "text/event-stream" {
		c.cfg.logger.Debug("mcp: the server offers no GET stream", "status", resp.StatusCode)
		return
	}
	err = c.pump(sse.NewReader(resp.Body, c.cfg.maxMessageSize))
	if c.ctx.Err() == nil {
		c.cfg.logger.Debug("mcp: the session's GET stream ended", "error", err)
	}
}

// pump delivers every message event of a long-lived stream (not tied to
// one request) to the client, until the stream ends; it returns why. An
// event too large to read fails only the request it answered.
func (c *httpConn) pump(events *sse.Reader) error {
	for {
		ev, err := events.Next()
		var big *sse.EventTooLargeError
		if errors.As(err, &big) {
			id, _ := jsonrpc.OversizeID(big.Head, big.Tail)
			receiveOversize(c.cfg.receiver, c.cfg.logger, id, c.cfg.maxMessageSize)
			continue
		}
		if err != nil {
			return err
		}
		if len(ev.Data) == 0 || (ev.Type != "" && ev.Type != "message") {
			continue
		}
		receiveFrame(c.cfg.receiver, ev.Data)
	}
}

// notifiesCancel: on 2026-07-28 closing the response stream is the whole
// signal, and a notification would be rejected by a conformant server
// (go-sdk's client sends one and loses the session to the 400).
func (c *httpConn) notifiesCancel(rev revision) bool { return !rev.streamCancels }

// headerRouted: a request's Mcp-Name and Mcp-Param-* headers come from the
// routing CallTool puts in its context.
func (c *httpConn) headerRouted() {}

// exchangeState is one request's exchange in flight.
type exchangeState struct {
	cancel context.CancelCauseFunc
	wrote  atomic.Bool   // a byte of the request's body went to the connection
	posted chan struct{} // closed once its POST has returned
	// postOnly: an HTTP+SSE request, whose POST carries no response
	// and is not abandoned with it (see legacySSE.post).
	postOnly bool
}

func (c *httpConn) abandon(id jsonrpc.ID, cause error) {
	c.mu.Lock()
	x := c.streams[id]
	delete(c.streams, id)
	c.mu.Unlock()
	if x != nil {
		x.cancel(cause)
	}
}

// unsentSettle bounds how long abandonUnsent waits for an abandoned POST to
// give up; one that takes longer is taken to have gone out.
const unsentSettle = time.Second

// abandonUnsent abandons request id if none of it has gone out yet — it is
// still being resolved, dialled or vetted (by an egress guard, say) — and
// reports whether, once its POST has returned, none of it ever did. Then
// the server never saw the request, and a cancellation notification would
// only send a credential for nothing. A request already on its way is left
// as it is, and false returned.
//
// An HTTP+SSE request's POST, not waited for by its caller, is waited for
// here whether or not it is on the wire yet: its cancellation must not
// reach the server before the request does (they ride POSTs of their own,
// and the server would record the cancel first and never stop the call).
func (c *httpConn) abandonUnsent(id jsonrpc.ID, cause error) bool {
	c.mu.Lock()
	x := c.streams[id]
	c.mu.Unlock()
	if x == nil || (x.wrote.Load() && !x.postOnly) {
		return false // answered already, or on the wire
	}
	c.abandon(id, cause)
	t := time.NewTimer(unsentSettle)
	defer t.Stop()
	select {
	case <-x.posted:
		return !x.wrote.Load()
	case <-t.C:
		return false
	}
}

func (c *httpConn) send(ctx context.Context, m *jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", errNotSent, err)
	}
	c.mu.Lock()
	closed, legacy := c.closed, c.legacySSE
	c.mu.Unlock()
	if closed {
		return fmt.Errorf("%w: %w", errNotSent, ErrClosed)
	}
	body, err := jsonrpc.Encode(m)
	if err != nil {
		return fmt.Errorf("%w: encoding: %w", errNotSent, err)
	}
	if legacy == nil && m.Method == "initialize" && c.cfg.pinned.legacySSE {
		// Pinned to the HTTP+SSE generation: no Streamable HTTP attempt.
		if legacy, err = c.openLegacySSE(ctx); err != nil {
			return fmt.Errorf("%w: %w", errNotSent, err)
		}
	}
	if legacy != nil {
		return legacy.post(ctx, m, body)
	}
	if !m.IsRequest() {
		return c.postMessage(ctx, m, body)
	}
	// A request: its exchange runs on its own goroutine under a context
	// that only abandon and close end, never the caller's — though it
	// carries the caller's values (an egress transport reads the run id),
	// and abandon ends it with the caller's reason (see stopCause).
	reqCtx, cancel := c.detach(ctx)
	x := &exchangeState{cancel: cancel, posted: make(chan struct{})}
	c.mu.Lock()
	c.streams[m.ID] = x
	c.mu.Unlock()
	if !c.goTracked(func() {
		defer c.abandon(m.ID, errExchangeDone)
		c.exchange(reqCtx, m, body, x)
	}) {
		c.abandon(m.ID, ErrClosed)
		return fmt.Errorf("%w: %w", errNotSent, ErrClosed)
	}
	return nil
}

// errExchangeDone ends the context of a request whose exchange is over.
var errExchangeDone = errors.New("mcp: exchange done")

// detach returns a context with ctx's values that ends only when cancel
// is called (with its cause) or the connection closes (with
// errConnClosed): a child of the connection's context (see connScoped),
// so that closing reaches it without a callback of its own.
func (c *httpConn) detach(ctx context.Context) (context.Context, context.CancelCauseFunc) {
	return context.WithCancelCause(connScoped(c.ctx, ctx))
}

// errConnClosed is the cause with which a closed connection ends its
// requests' contexts.
var errConnClosed = fmt.Errorf("%w: %w", context.Canceled, ErrClosed)

// goTracked runs f on a goroutine that close waits for, unless the
// connection is closed.
func (c *httpConn) goTracked(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
	return true
}

// postMessage POSTs a notification or a response. Its reply is discarded
// unread: it can never be mistaken for another request's response.
func (c *httpConn) postMessage(ctx context.Context, m *jsonrpc.Message, body []byte) error {
	resp, err := c.post(ctx, m, body, nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return statusError(m.Method, resp)
	}
	return nil
}

// exchange POSTs a request and delivers what comes back: a JSON response,
// or an event stream of notifications, server requests and the response.
func (c *httpConn) exchange(ctx context.Context, m *jsonrpc.Message, body []byte, x *exchangeState) {
	resp, err := c.post(ctx, m, body, &x.wrote)
	close(x.posted)
	if err != nil {
		c.failRequest(ctx, m, err)
		return
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" && m.Method == "initialize" {
		c.mu.Lock()
		c.sessionID = sid
		c.fixed.session = []string{sid}
		c.mu.Unlock()
	}
	mediaType := contentMediaType(resp.Header.Get("Content-Type"))
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		// Whatever the body says (some send a JSON-RPC error): the
		// status and its challenge say what to do.
		c.failRequest(ctx, m, statusError(m.Method, resp))
	case resp.StatusCode == http.StatusNotFound && c.session() != "":
		c.cfg.receiver.lost(ErrSessionExpired)
		c.failRequest(ctx, m, closedError(ErrSessionExpired))
	case m.Method == "initialize" && isRefusal(resp.StatusCode) && mediaType != "application/json":
		// Not a Streamable HTTP server: perhaps HTTP+SSE (2024-11-05).
		c.fallBackToLegacySSE(ctx, m, body, resp)
	case mediaType == "text/event-stream" && resp.StatusCode == http.StatusOK:
		c.readStream(ctx, m, resp)
	case mediaType == "application/json":
		c.readJSON(ctx, m, resp)
	default:
		c.failRequest(ctx, m, statusError(m.Method, resp))
	}
}

// isRefusal reports a status with which a server that does not speak
// Streamable HTTP refuses a POST.
func isRefusal(status int) bool {
	return status == http.StatusBadRequest || status == http.StatusNotFound || status == http.StatusMethodNotAllowed
}

func (c *httpConn) session() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID
}

// readJSON delivers a JSON body: the response, or an error response for
// the request even when the server could not read its id.
func (c *httpConn) readJSON(ctx context.Context, m *jsonrpc.Message, resp *http.Response) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.cfg.maxMessageSize)+1))
	if err != nil {
		c.failRequest(ctx, m, fmt.Errorf("%w: reading the response: %w", ErrClosed, err))
		return
	}
	if len(data) > c.cfg.maxMessageSize {
		c.failRequest(ctx, m, c.tooLarge(m))
		return
	}
	reply, err := jsonrpc.Decode(data)
	switch {
	case err != nil && resp.StatusCode/100 != 2:
		c.failRequest(ctx, m, statusError(m.Method, resp))
	case err != nil:
		c.failRequest(ctx, m, &ProtocolError{Reason: m.Method + ": " + err.Error()})
	case reply.IsResponse() && !reply.ID.IsValid():
		reply.ID = m.ID // an error the server could not attach to our id
		c.deliver(ctx, reply)
	case reply.IsResponse() && reply.ID != m.ID:
		c.failRequest(ctx, m, &ProtocolError{Reason: fmt.Sprintf("%s: response for id %s, want %s", m.Method, reply.ID, m.ID)})
	default:
		c.deliver(ctx, reply)
	}
}

// Draining bounds: what is left of a response stream after its response.
const (
	drainMax     = 64 << 10
	drainTimeout = time.Second
)

// drain reads what is left of a response stream once its response has
// arrived — servers end the stream right after it — so that the connection
// can carry the next request instead of being dialled anew. A stream that
// goes on is cut after drainMax bytes or drainTimeout. It runs on the
// request's own goroutine, never the caller's.
func drain(body io.ReadCloser) {
	t := time.AfterFunc(drainTimeout, func() { body.Close() })
	defer t.Stop()
	io.Copy(io.Discard, io.LimitReader(body, drainMax))
}

// maxResumes bounds how often one request's event stream is resumed.
const maxResumes = 5

// readStream delivers the events of a response stream until the response to
// m arrives. A handshake-era server may end the stream early after a
// priming event id; the stream is then resumed with GET and Last-Event-ID
// after the delay the server asked for. 2026-07-28 has no resumption: a
// broken stream loses the request.
func (c *httpConn) readStream(ctx context.Context, m *jsonrpc.Message, resp *http.Response) {
	body := resp.Body
	retry := time.Second
	for resumes := 0; ; resumes++ {
		done, lastID, delay, err := c.readEvents(ctx, m, body)
		if done && ctx.Err() == nil {
			drain(body)
		}
		if done || ctx.Err() != nil {
			return
		}
		if delay > 0 {
			retry = delay
		}
		// Until the handshake settles, the stream is taken for a
		// handshake-era server's: only one would answer initialize.
		rev := c.revision()
		if lastID == "" || (rev.name != "" && !rev.sessions) || resumes == maxResumes {
			if err == nil {
				err = errors.New("response stream ended before the response")
			}
			c.failRequest(ctx, m, fmt.Errorf("%w: %s: %w", ErrClosed, m.Method, err))
			return
		}
		t := time.NewTimer(retry)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		next, err := c.resume(ctx, lastID)
		if err != nil {
			c.failRequest(ctx, m, fmt.Errorf("%w: %s: resuming the response stream: %w", ErrClosed, m.Method, err))
			return
		}
		defer next.Close()
		body = next
	}
}

// readEvents reads one stream body. done reports that the response to m
// arrived (or the stream broke the protocol, which fails m).
func (c *httpConn) readEvents(ctx context.Context, m *jsonrpc.Message, body io.Reader) (done bool, lastID string, retry time.Duration, err error) {
	events := c.eventReader(body)
	defer c.putEventReader(events)
	for {
		ev, err := events.Next()
		if err != nil {
			var big *sse.EventTooLargeError
			if errors.As(err, &big) {
				// Skipped unread. Another request's response (which a
				// server may send here) fails that request alone.
				if id, ok := jsonrpc.OversizeID(big.Head, big.Tail); ok && id != m.ID {
					receiveOversize(c.cfg.receiver, c.cfg.logger, id, c.cfg.maxMessageSize)
					continue
				}
				c.failRequest(ctx, m, c.tooLarge(m))
				return true, "", 0, nil
			}
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return false, lastID, retry, err
		}
		lastID = ev.ID
		if ev.Retry > 0 {
			retry = ev.Retry
		}
		if len(ev.Data) == 0 || (ev.Type != "" && ev.Type != "message") {
			continue
		}
		msg, err := jsonrpc.Decode(ev.Data)
		if err != nil {
			var de *jsonrpc.DecodeError
			errors.As(err, &de)
			c.cfg.receiver.receiveInvalid(de)
			if de.ID == m.ID {
				return true, "", 0, nil
			}
			continue
		}
		c.deliver(ctx, msg)
		if msg.IsResponse() && msg.ID == m.ID {
			return true, "", 0, nil
		}
	}
}

// tooLarge is the error of request m whose response was larger than
// MaxMessageSize.
func (c *httpConn) tooLarge(m *jsonrpc.Message) error {
	return &ProtocolError{Reason: fmt.Sprintf("%s: message longer than %d bytes (MaxMessageSize)", m.Method, c.cfg.maxMessageSize)}
}

// eventReader returns a reader of body's events, reusing the buffer of a
// stream that has ended if there is one. No event it returns shares that
// buffer: each Data is a copy.
func (c *httpConn) eventReader(body io.Reader) *sse.Reader {
	if r, ok := c.readers.Get().(*sse.Reader); ok {
		r.Reset(body)
		return r
	}
	return sse.NewReader(body, c.cfg.maxMessageSize)
}

// putEventReader hands back a reader whose stream has ended.
func (c *httpConn) putEventReader(r *sse.Reader) {
	r.Reset(nil)
	c.readers.Put(r)
}

// resume reopens a handshake-era response stream with GET and Last-Event-ID.
func (c *httpConn) resume(ctx context.Context, lastID string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url.String(), nil)
	if err != nil {
		return nil, err
	}
	c.setHeaders(req, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", lastID)
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, c.transportError(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET: HTTP %s", resp.Status)
	}
	return resp.Body, nil
}

// deliver hands a message to the client unless the request was abandoned:
// nothing read from an abandoned stream reaches anyone, and a question the
// server asked on it is not answered once it is abandoned.
func (c *httpConn) deliver(ctx context.Context, m *jsonrpc.Message) {
	if ctx.Err() != nil {
		return
	}
	c.cfg.receiver.receiveWithin(ctx, m)
}

func (c *httpConn) failRequest(ctx context.Context, m *jsonrpc.Message, err error) {
	if ctx.Err() != nil {
		return // abandoned: the caller already has its error
	}
	c.cfg.receiver.fail(m.ID, err)
}

func (c *httpConn) revision() revision {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rev
}

// post sends one message as a POST to the MCP endpoint. wrote, if set, is
// set once a byte of the body has gone to the connection.
func (c *httpConn) post(ctx context.Context, m *jsonrpc.Message, body []byte, wrote *atomic.Bool) (*http.Response, error) {
	ctx, r := c.requestBody(ctx, body, wrote)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url.String(), r)
	if err != nil {
		return nil, err
	}
	if _, inMemory := r.(*bytes.Reader); !inMemory {
		// What NewRequest sets for a *bytes.Reader: the same
		// Content-Length on the wire, not a chunked body.
		req.ContentLength = int64(len(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	c.setHeaders(req, m)
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, c.transportError(err)
	}
	if resp.StatusCode/100 == 3 {
		resp.Body.Close()
		return nil, fmt.Errorf("mcp: %s: server answered with a redirect (HTTP %s), which is never followed", m.Method, resp.Status)
	}
	return resp, nil
}

// transportError strips the URL (which may carry a secret) from a client
// error, keeping what went wrong.
func (c *httpConn) transportError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if errors.Is(ue.Err, errRedirect) {
			return fmt.Errorf("mcp: server answered with a redirect, which is never followed")
		}
		return fmt.Errorf("%w: %s %s: %w", ErrClosed, ue.Op, redactedURL(c.url), ue.Err)
	}
	return fmt.Errorf("%w: %w", ErrClosed, err)
}

// setHeaders sets the headers every MCP POST carries, and those the
// negotiated revision adds.
func (c *httpConn) setHeaders(req *http.Request, m *jsonrpc.Message) {
	for k, v := range c.header {
		req.Header[k] = v
	}
	// The canonical keys, and values shared by the connection's requests
	// (see fixedHeaders): what Header.Set would store, without its
	// allocations.
	c.mu.Lock()
	rev, fixed := c.rev, c.fixed
	c.mu.Unlock()
	req.Header["Accept"] = fixed.accept
	if c.cfg.traced {
		injectHeaders(req.Context(), propagation.HeaderCarrier(req.Header))
	}
	if m != nil {
		req.Header["Content-Type"] = fixed.contentType
	}
	if fixed.session != nil {
		req.Header["Mcp-Session-Id"] = fixed.session
	}
	if m == nil {
		if rev.versionHeader {
			req.Header["Mcp-Protocol-Version"] = fixed.version(rev.name)
		}
		return
	}
	var p struct {
		Meta struct {
			ProtocolVersion string `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
		Name   string `json:"name"`
		URI    string `json:"uri"`
		TaskID string `json:"taskId"`
	}
	// On a handshake-era connection nothing below needs the params: the
	// revision is the negotiated one, and the Mcp-* headers are the
	// stateless revisions'. Before the handshake settles, a request's _meta
	// names the revision it speaks (server/discover's does). Once it has
	// settled, every request speaks the negotiated revision, and only an
	// Mcp-Name that the caller did not hand over (CallTool does) needs the
	// params decoded.
	routing := callRoutingFrom(req.Context())
	if m.Method != "tools/call" {
		routing = nil
	}
	needName := rev.routingHeaders && m.IsRequest() && routing == nil && namedMethod(m.Method)
	if len(m.Params) > 0 && (rev.name == "" || rev.metaEnvelope && needName) {
		_ = json.Unmarshal(m.Params, &p)
	}
	if r, ok := lookupRevision(p.Meta.ProtocolVersion); ok && r.metaEnvelope {
		rev = r
	}
	if rev.versionHeader {
		req.Header["Mcp-Protocol-Version"] = fixed.version(rev.name)
	}
	if !rev.routingHeaders || !m.IsRequest() {
		return
	}
	// The Mcp-Param-* namespace belongs to the call's arguments: a static
	// header must not stand in for an argument that was not sent.
	for k := range req.Header {
		if strings.HasPrefix(http.CanonicalHeaderKey(k), "Mcp-Param-") {
			delete(req.Header, k)
		}
	}
	req.Header.Set("Mcp-Method", m.Method)
	if routing != nil {
		for k, v := range routing.params {
			req.Header[k] = v
		}
		req.Header.Set("Mcp-Name", headerValue(routing.name))
		return
	}
	switch m.Method {
	case "tools/call", "prompts/get":
		req.Header.Set("Mcp-Name", headerValue(p.Name))
	case "resources/read":
		req.Header.Set("Mcp-Name", headerValue(p.URI))
	case "tasks/get", "tasks/update", "tasks/cancel":
		req.Header.Set("Mcp-Name", headerValue(p.TaskID))
	}
}

// namedMethod reports whether a request of method carries Mcp-Name.
func namedMethod(method string) bool {
	switch method {
	case "tools/call", "prompts/get", "resources/read", "tasks/get", "tasks/update", "tasks/cancel":
		return true
	}
	return false
}

// headerValue encodes a value for an Mcp-* header: as is when it is plain
// visible ASCII, else in the =?base64?…?= form the spec defines.
func headerValue(v string) string {
	plain := v == strings.TrimSpace(v) && !strings.HasPrefix(v, "=?base64?")
	for i := 0; plain && i < len(v); i++ {
		plain = v[i] >= 0x20 && v[i] < 0x7f
	}
	if plain {
		return v
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
}

// close ends every stream, and the session with a DELETE bounded by
// closeTimeout, and by hurriedGrace once ctx has ended.
func (c *httpConn) close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	session, legacy := c.sessionID, c.legacySSE
	c.mu.Unlock()
	c.cancel(errConnClosed)
	if session != "" && legacy == nil {
		ctx, cancel := teardownContext(ctx, c.closeTimeout)
		req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.url.String(), nil)
		if err == nil {
			c.setHeaders(req, nil)
			if resp, err := c.client.Do(req); err == nil {
				resp.Body.Close()
			} else {
				c.cfg.logger.Debug("mcp: ending the session failed", "error", c.transportError(err))
			}
		}
		cancel()
	}
	c.wg.Wait()
	c.cfg.receiver.lost(ErrClosed)
	return nil
}
