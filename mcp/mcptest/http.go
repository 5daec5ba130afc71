package mcptest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
	"github.com/andonhq/andon/mcp/internal/sse"
)

// HTTP generations a handler can serve.
const (
	// Stateless is 2026-07-28 Streamable HTTP: every request its own POST,
	// no sessions; a client that disconnects has cancelled its request.
	Stateless = "stateless"
	// Sessions is Streamable HTTP of 2025-03-26 to 2025-11-25: initialize
	// starts a session (Mcp-Session-Id); a disconnect is not a cancel.
	Sessions = "sessions"
	// LegacySSE is the HTTP+SSE transport of 2024-11-05: a GET event
	// stream names a POST endpoint, and responses come on the stream.
	LegacySSE = "sse"
)

// More kinds of [Record], for HTTP.
const (
	// StreamClosed: the client went away from a request's response before
	// the response was written (ID names the request).
	StreamClosed = "stream_closed"
	// Rejected: the server refused a message over HTTP (Reason says why).
	Rejected = "rejected"
)

// HTTPOptions configure an HTTP handler of a Server. The zero value serves
// Streamable HTTP, stateless and with sessions, at any path, with SSE
// responses.
type HTTPOptions struct {
	// Generations are those served. Nil means Stateless and Sessions.
	// With LegacySSE alone, GET opens the event stream and the endpoint is
	// the same path with a sessionId query.
	Generations []string
	// JSONResponse answers requests with one application/json body instead
	// of an event stream (progress then cannot be sent).
	JSONResponse bool
	// HeaderDelay holds back the response headers of every tools/call.
	HeaderDelay time.Duration
	// RejectCancel, if set, is the status with which a POSTed
	// notifications/cancelled is refused (after it is recorded and acted on
	// if CancelAnyway is set).
	RejectCancel int
	// CancelAnyway acts on a notifications/cancelled that is then rejected.
	CancelAnyway bool
	// CancelReplyDelay holds back the reply to a POSTed notification.
	CancelReplyDelay time.Duration
	// RedirectTo, if set, answers every POST with 307 to this location.
	RedirectTo string
	// PrimeStream makes a handshake-era event stream start with a priming
	// event (an id and no data) and end, before the response, after a
	// retry hint of this duration, so the client must resume it with GET
	// and Last-Event-ID (the 2025-11-25 polling pattern). Zero disables.
	PrimeStream time.Duration
	// Fault makes the server misbehave below the protocol on every POST
	// whose method is in FaultMethods (nil: every POST), after recording
	// it: see the Fault constants. Empty means none.
	Fault Fault
	// FaultMethods limits Fault to these methods.
	FaultMethods []string
}

// Fault is a way an HTTP server can stall a client below the protocol. The
// client must give up on each within its budget.
type Fault string

// Faults of an HTTP server.
const (
	// FaultSilent reads the request and never writes a byte of a response.
	FaultSilent Fault = "silent"
	// FaultHeadersThenSilence sends 200 and event-stream headers, then
	// nothing.
	FaultHeadersThenSilence Fault = "headers-then-silence"
	// FaultKeepAlive sends an event stream of SSE comments, one every
	// 50ms, forever: bytes keep arriving, no message ever does.
	FaultKeepAlive Fault = "keep-alive"
	// FaultTrickle sends a JSON response body one byte a second.
	FaultTrickle Fault = "trickle"
)

func (o *HTTPOptions) serves(gen string) bool {
	if o.Generations == nil {
		return gen == Stateless || gen == Sessions
	}
	for _, g := range o.Generations {
		if g == gen {
			return true
		}
	}
	return false
}

// HTTPHandler returns a handler that serves s over HTTP. A nil opts is the
// zero HTTPOptions. Serve it on loopback, e.g. with httptest.NewServer.
func (s *Server) HTTPHandler(opts *HTTPOptions) http.Handler {
	h := &httpHandler{s: s, sessions: map[string]*httpSession{}}
	if opts != nil {
		h.opts = *opts
	}
	return h
}

type httpHandler struct {
	s    *Server
	opts HTTPOptions

	mu       sync.Mutex
	sessions map[string]*httpSession
}

// httpSession is a handshake-era session (Streamable or HTTP+SSE).
type httpSession struct {
	conn   *serverConn
	ctx    context.Context
	cancel context.CancelFunc
	events *eventStream // HTTP+SSE only: the GET stream
	resume *resumable   // a stream to resume with GET (PrimeStream)
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w = syncedWriter{w, h.s.rec}
	switch r.Method {
	case http.MethodPost:
		h.post(w, r)
	case http.MethodGet:
		h.get(w, r)
	case http.MethodDelete:
		h.delete(w, r)
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// syncedWriter is a response writer that lets nothing out before the
// record file has every record so far (see [recorder.sync]). Flushes and
// deadlines reach the writer it wraps through Unwrap.
type syncedWriter struct {
	http.ResponseWriter
	rec *recorder
}

func (w syncedWriter) WriteHeader(code int) {
	w.rec.sync()
	w.ResponseWriter.WriteHeader(code)
}

func (w syncedWriter) Write(p []byte) (int, error) {
	w.rec.sync()
	return w.ResponseWriter.Write(p)
}

// Unwrap is for http.ResponseController.
func (w syncedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (h *httpHandler) newSession() (string, *httpSession) {
	b := make([]byte, 16)
	rand.Read(b)
	id := base64.RawURLEncoding.EncodeToString(b)
	ctx, cancel := context.WithCancel(context.Background())
	sess := &httpSession{
		conn:   &serverConn{s: h.s, inflight: map[string]context.CancelCauseFunc{}, cancel: func(error) { cancel() }},
		ctx:    ctx,
		cancel: cancel,
	}
	h.mu.Lock()
	h.sessions[id] = sess
	h.mu.Unlock()
	h.s.trackHTTP(sess)
	return id, sess
}

func (h *httpHandler) session(id string) *httpSession {
	h.mu.Lock()
	defer h.mu.Unlock()
	sess := h.sessions[id]
	if sess != nil && sess.ctx.Err() != nil {
		return nil // ended: by DELETE or by ExpireSessions
	}
	return sess
}

func (h *httpHandler) post(w http.ResponseWriter, r *http.Request) {
	if h.opts.RedirectTo != "" {
		http.Redirect(w, r, h.opts.RedirectTo, http.StatusTemporaryRedirect)
		return
	}
	// Read the whole body first: net/http notices a client that goes away
	// only once the body has been read to EOF.
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		return
	}
	if h.opts.serves(LegacySSE) && r.URL.Query().Get("sessionId") != "" {
		h.postLegacy(w, r, body)
		return
	}
	if !h.opts.serves(Stateless) && !h.opts.serves(Sessions) {
		http.Error(w, "this server speaks HTTP+SSE: GET the event stream", http.StatusMethodNotAllowed)
		return
	}
	m, err := jsonrpc.Decode(body)
	if err != nil {
		h.s.rec.add(Record{Kind: Received, Reason: err.Error(), Raw: jsonOrString(body)})
		writeJSONError(w, http.StatusBadRequest, jsonrpc.CodeParseError, err.Error(), nil)
		return
	}
	sessionID := r.Header.Get("Mcp-Session-Id")
	rec := Record{Kind: Received, Method: m.Method, Params: m.Params, Raw: jsonOrString(body), Session: sessionID, Header: r.Header.Clone()}
	if m.ID.IsValid() {
		rec.ID = idKey(m.ID)
	}
	h.s.rec.add(rec)

	if h.opts.Fault != "" && (h.opts.FaultMethods == nil || slices.Contains(h.opts.FaultMethods, m.Method)) {
		h.misbehave(w, r, m)
		return
	}
	if !m.IsRequest() && h.s.stalls(m.Method) {
		h.hold(r, m) // a notification POST that gets no reply
		return
	}

	var base baseParams
	_ = json.Unmarshal(m.Params, &base)
	modern := base.Meta.ProtocolVersion != ""
	switch {
	case modern && h.opts.serves(Stateless):
		h.serveStateless(w, r, m, base)
	case m.Method == "initialize" && h.opts.serves(Sessions):
		id, sess := h.newSession()
		w.Header().Set("Mcp-Session-Id", id)
		h.serveInSession(w, r, sess, m)
	case h.opts.serves(Sessions) && sessionID != "":
		sess := h.session(sessionID)
		if sess == nil {
			h.reject(w, http.StatusNotFound, "unknown session "+sessionID)
			return
		}
		h.serveInSession(w, r, sess, m)
	case h.opts.serves(Sessions):
		h.reject(w, http.StatusBadRequest, "missing Mcp-Session-Id")
	default:
		h.reject(w, http.StatusBadRequest, "this server speaks 2026-07-28 only: a request needs its _meta")
	}
}

// hold keeps a request unanswered until the client goes away, which is
// recorded, or the server closes.
func (h *httpHandler) hold(r *http.Request, m *jsonrpc.Message) {
	select {
	case <-r.Context().Done():
		h.gone(m)
	case <-h.s.done:
	}
}

// gone records that the client went away from m (a request, or a POSTed
// notification) before it was answered.
func (h *httpHandler) gone(m *jsonrpc.Message) {
	rec := Record{Kind: StreamClosed, Method: m.Method}
	if m.ID.IsValid() {
		rec.ID = idKey(m.ID)
	}
	h.s.rec.add(rec)
}

// misbehave answers m with h.opts.Fault, until the client goes away or the
// server closes.
func (h *httpHandler) misbehave(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) {
	var drip []byte // written one piece a tick
	tick := time.Hour
	switch h.opts.Fault {
	case FaultHeadersThenSilence:
		w.Header().Set("Content-Type", "text/event-stream")
	case FaultKeepAlive:
		w.Header().Set("Content-Type", "text/event-stream")
		drip, tick = []byte(strings.Repeat(": keep-alive\n\n", 1<<16)), 50*time.Millisecond
	case FaultTrickle:
		w.Header().Set("Content-Type", "application/json")
		drip, _ = jsonrpc.Encode(&jsonrpc.Message{ID: m.ID, Result: json.RawMessage(`{"supportedVersions":["2026-07-28"],"capabilities":{},"content":[]}`)})
		tick = time.Second
	}
	if h.opts.Fault != FaultSilent {
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
	}
	piece := 1
	if h.opts.Fault == FaultKeepAlive {
		piece = len(": keep-alive\n\n")
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if len(drip) == 0 {
				continue
			}
			n := min(piece, len(drip))
			if _, err := w.Write(drip[:n]); err != nil {
				return
			}
			drip = drip[n:]
			http.NewResponseController(w).Flush()
		case <-r.Context().Done():
			h.gone(m)
			return
		case <-h.s.done:
			return
		}
	}
}

func (h *httpHandler) reject(w http.ResponseWriter, status int, reason string) {
	h.s.rec.add(Record{Kind: Rejected, Reason: reason})
	http.Error(w, reason, status)
}

// serveStateless serves one 2026-07-28 request. Its handler's context is
// the HTTP request's: a client that goes away has cancelled it.
func (h *httpHandler) serveStateless(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, base baseParams) {
	if !m.IsRequest() {
		// This revision defines no client notification over HTTP.
		h.s.rec.add(Record{Kind: Rejected, Method: m.Method, Reason: "no notifications over 2026-07-28 HTTP"})
		writeJSONError(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, "2026-07-28 HTTP accepts requests only", nil)
		return
	}
	if reason := headerMismatch(r, m, base); reason != "" {
		h.s.rec.add(Record{Kind: Rejected, Method: m.Method, ID: idKey(m.ID), Reason: reason})
		writeJSONError(w, http.StatusBadRequest, jsonrpc.CodeHeaderMismatch, reason, &m.ID)
		return
	}
	conn := &serverConn{s: h.s, inflight: map[string]context.CancelCauseFunc{}, cancel: func(error) {}}
	h.respond(w, r, r.Context(), conn, m, nil)
}

// headerMismatch checks the standard headers of a 2026-07-28 request.
func headerMismatch(r *http.Request, m *jsonrpc.Message, base baseParams) string {
	if v := r.Header.Get("MCP-Protocol-Version"); v != base.Meta.ProtocolVersion {
		return fmt.Sprintf("MCP-Protocol-Version %q does not match _meta %q", v, base.Meta.ProtocolVersion)
	}
	if v := r.Header.Get("Mcp-Method"); v != m.Method {
		return fmt.Sprintf("Mcp-Method %q does not match method %q", v, m.Method)
	}
	if m.Method == "tools/call" {
		var p struct {
			Name      string                     `json:"name"`
			Arguments map[string]json.RawMessage `json:"arguments"`
		}
		_ = json.Unmarshal(m.Params, &p)
		if got := decodeHeaderValue(r.Header.Get("Mcp-Name")); got != p.Name {
			return fmt.Sprintf("Mcp-Name %q does not match name %q", got, p.Name)
		}
		if p.Name == "route" {
			// The body's annotated arguments must travel as headers too.
			for arg, header := range map[string]string{"region": "Mcp-Param-Region", "shard": "Mcp-Param-Shard"} {
				want := ""
				if raw, ok := p.Arguments[arg]; ok && string(raw) != "null" {
					var v any
					_ = json.Unmarshal(raw, &v)
					want = strings.Trim(string(raw), `"`)
					if s, ok := v.(string); ok {
						want = s
					}
				}
				if got := decodeHeaderValue(r.Header.Get(header)); got != want {
					return fmt.Sprintf("%s %q does not match argument %s %q", header, got, arg, want)
				}
			}
		}
	}
	return ""
}

func decodeHeaderValue(v string) string {
	if strings.HasPrefix(v, "=?base64?") && strings.HasSuffix(v, "?=") {
		if b, err := base64.StdEncoding.DecodeString(v[len("=?base64?") : len(v)-2]); err == nil {
			return string(b)
		}
	}
	return v
}

// serveInSession serves a message of a Streamable HTTP session. Handlers
// run under the session's context: a client that goes away from a response
// stream has not cancelled anything (it must say so with a notification).
func (h *httpHandler) serveInSession(w http.ResponseWriter, r *http.Request, sess *httpSession, m *jsonrpc.Message) {
	if !m.IsRequest() {
		h.acceptMessage(w, r, sess, m)
		return
	}
	h.respond(w, r, sess.ctx, sess.conn, m, sess)
}

// acceptMessage takes a notification or a response: 202, or the refusal
// the options ask for.
func (h *httpHandler) acceptMessage(w http.ResponseWriter, r *http.Request, sess *httpSession, m *jsonrpc.Message) {
	isCancel := m.Method == "notifications/cancelled"
	if !isCancel || h.opts.RejectCancel == 0 || h.opts.CancelAnyway {
		sess.conn.handleMessage(sess.ctx, m, nil)
	}
	if isCancel && h.opts.CancelReplyDelay > 0 {
		t := time.NewTimer(h.opts.CancelReplyDelay)
		select {
		case <-t.C:
		case <-r.Context().Done(): // the client gave up on the reply
		}
		t.Stop()
	}
	if isCancel && h.opts.RejectCancel != 0 {
		h.s.rec.add(Record{Kind: Rejected, Method: m.Method, Reason: fmt.Sprintf("cancellation refused with %d", h.opts.RejectCancel)})
		http.Error(w, "cancellation refused", h.opts.RejectCancel)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// respond runs request m and writes what it produces to the response:
// an event stream (progress, server requests, then the response) or one
// JSON body. It returns once the response is written or the client has
// gone away, which it records.
func (h *httpHandler) respond(w http.ResponseWriter, r *http.Request, ctx context.Context, conn *serverConn, m *jsonrpc.Message, sess *httpSession) {
	if h.opts.HeaderDelay > 0 && m.Method == "tools/call" {
		t := time.NewTimer(h.opts.HeaderDelay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			h.s.rec.add(Record{Kind: StreamClosed, Method: m.Method, ID: idKey(m.ID)})
			return
		}
	}
	out := newResponseOut(w, r, m.ID, h.opts.JSONResponse)
	if sess != nil && h.opts.PrimeStream > 0 && !h.opts.JSONResponse && m.Method == "tools/call" {
		out.prime(sess, h.opts.PrimeStream)
	}
	conn.handleMessage(ctx, m, out)
	select {
	case <-out.finished:
	case <-r.Context().Done():
		if !out.isFinished() {
			h.s.rec.add(Record{Kind: StreamClosed, Method: m.Method, ID: idKey(m.ID)})
		}
	case <-out.detached:
		// The stream was handed over for resumption; the GET carries on.
	case <-out.aborted:
		out.close()
		panic(http.ErrAbortHandler) // drops the connection mid-response
	}
	out.close()
}

func (h *httpHandler) delete(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("Mcp-Session-Id")
	h.s.rec.add(Record{Kind: Received, Method: "DELETE", Session: id, Header: r.Header.Clone()})
	if h.s.stalls("DELETE") {
		h.hold(r, &jsonrpc.Message{Method: "DELETE"})
		return
	}
	h.mu.Lock()
	sess := h.sessions[id]
	delete(h.sessions, id)
	h.mu.Unlock()
	if sess == nil {
		http.Error(w, "unknown session", http.StatusNotFound)
		return
	}
	sess.cancel()
	w.WriteHeader(http.StatusOK)
}

func writeJSONError(w http.ResponseWriter, status int, code int64, msg string, id *jsonrpc.ID) {
	m := &jsonrpc.Message{Error: &jsonrpc.Error{Code: code, Message: msg}}
	if id != nil {
		m.ID = *id
	}
	data, _ := jsonrpc.Encode(m)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(data)
}

// aborter is an outbox that can drop its connection mid-response, for the
// crash tool over HTTP.
type aborter interface{ abort() }

// responseOut is the outbox of one request answered over HTTP.
type responseOut struct {
	w        http.ResponseWriter
	req      *http.Request
	id       jsonrpc.ID
	json     bool
	mu       sync.Mutex
	started  bool
	done     bool // closed: nothing more may be written
	fin      bool
	finished chan struct{} // closed once the response is written
	detached chan struct{} // closed when a primed stream ends early
	aborted  chan struct{} // closed by abort
	primed   *resumable
}

func (o *responseOut) abort() { close(o.aborted) }

func newResponseOut(w http.ResponseWriter, r *http.Request, id jsonrpc.ID, json bool) *responseOut {
	return &responseOut{w: w, req: r, id: id, json: json, finished: make(chan struct{}), detached: make(chan struct{}), aborted: make(chan struct{})}
}

func (o *responseOut) isFinished() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.fin
}

func (o *responseOut) write(m *jsonrpc.Message) error {
	data, err := jsonrpc.Encode(m)
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	final := m.IsResponse() && m.ID == o.id
	if o.primed != nil {
		o.primed.write(data, final)
	} else {
		// Once the client has gone, nothing more is written — in
		// particular a late reply does not count as the response.
		if o.done || o.req.Context().Err() != nil {
			return errors.New("mcptest: response stream closed")
		}
		if o.json {
			if !final {
				return nil // a JSON response carries nothing but the response
			}
			o.w.Header().Set("Content-Type", "application/json")
			if _, err := o.w.Write(data); err != nil {
				return err
			}
		} else {
			o.startLocked()
			if err := sse.WriteEvent(o.w, "", data); err != nil {
				return err
			}
			if err := http.NewResponseController(o.w).Flush(); err != nil {
				return err
			}
		}
	}
	if final && !o.fin {
		o.fin = true
		close(o.finished)
	}
	return nil
}

func (o *responseOut) startLocked() {
	if !o.started {
		o.started = true
		o.w.Header().Set("Content-Type", "text/event-stream")
		o.w.Header().Set("X-Accel-Buffering", "no")
		o.w.WriteHeader(http.StatusOK)
	}
}

func (o *responseOut) writeRaw(pieces ...[]byte) {
	if o.json {
		o.mu.Lock()
		if !o.done {
			o.w.Header().Set("Content-Type", "application/json")
			for _, p := range pieces {
				o.w.Write(p)
			}
		}
		o.mu.Unlock()
		return
	}
	o.mu.Lock()
	o.startLocked()
	o.mu.Unlock()
	writeRawEvent(&o.mu, func() bool { return o.done }, o.w, pieces)
}

// close ends the outbox: the handler is returning.
func (o *responseOut) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.done = true
}
