package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
	"github.com/andonhq/andon/mcp/internal/sse"
)

// ServeHTTP serves Streamable HTTP at the request's path, both eras on
// one endpoint:
//
//   - a 2026-07-28 request (its params' _meta names the revision) is served
//     on its own, with no session; closing its response stream is its
//     cancel;
//   - initialize starts a handshake-era session (Mcp-Session-Id); the
//     session's requests are cancelled by notifications/cancelled, and,
//     since this server offers no resumption, by closing their response
//     stream too (a response with no stream to go to is lost); GET opens
//     its standalone stream, which carries list changes; DELETE ends it,
//     cancelling what is in flight.
//
// A request from a browser page of another origin is refused (403), as
// the transport's rules against DNS rebinding ask. Serve it behind the
// caller's own authentication.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		http.Error(w, "mcp: cross-origin request refused", http.StatusForbidden)
		return
	}
	switch r.Method {
	case http.MethodPost:
		s.post(w, r)
	case http.MethodGet:
		s.get(w, r)
	case http.MethodDelete:
		s.deleteSession(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "mcp: method not allowed", http.StatusMethodNotAllowed)
	}
}

// sameOrigin reports whether r has no Origin or one whose host is the
// request's own, or loopback.
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if u.Host == r.Host {
		return true
	}
	ip := net.ParseIP(u.Hostname())
	return u.Hostname() == "localhost" || (ip != nil && ip.IsLoopback())
}

func (s *Server) post(w http.ResponseWriter, r *http.Request) {
	// The whole body first: net/http notices a client that goes away only
	// once the body has been read.
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(s.opts.MaxMessageSize)+1))
	if err != nil {
		return
	}
	if len(body) > s.opts.MaxMessageSize {
		writeRPCError(w, http.StatusRequestEntityTooLarge, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("message over %d bytes", s.opts.MaxMessageSize)})
		return
	}
	m, err := jsonrpc.Decode(body)
	if err != nil {
		writeRPCError(w, http.StatusBadRequest, nil, &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: err.Error()})
		return
	}
	var meta struct {
		Meta struct {
			ProtocolVersion string `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	}
	_ = json.Unmarshal(m.Params, &meta) // a bad params is the request's to refuse
	sessionID := r.Header.Get("Mcp-Session-Id")
	switch {
	case meta.Meta.ProtocolVersion != "":
		s.postStateless(w, r, m, meta.Meta.ProtocolVersion)
	case sessionID == "" && m.Method == "initialize":
		ss := newServerSession(s, context.Background(), "http")
		if !s.track(ss) {
			http.Error(w, "mcp: server closed", http.StatusServiceUnavailable)
			return
		}
		s.mu.Lock()
		s.httpByID[ss.id] = ss
		s.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", ss.id)
		s.postInSession(w, r, ss, m)
	case sessionID == "" && m.IsNotification() && s.servesStateless(r.Header.Get("MCP-Protocol-Version")):
		// A 2026-07-28 client's notification, without _meta: go-sdk's
		// client (v1.8.0) still POSTs notifications/cancelled after it
		// closes the request's stream, and takes a refusal for the end of
		// its connection. The closed stream was the cancel; drop it.
		w.WriteHeader(http.StatusAccepted)
	case sessionID == "" && m.IsRequest() && s.servesStateless(r.Header.Get("MCP-Protocol-Version")):
		// A 2026-07-28 request whose params lack the _meta that says so.
		writeRPCError(w, http.StatusBadRequest, &m.ID, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing _meta io.modelcontextprotocol/protocolVersion"})
	case sessionID == "":
		writeRPCError(w, http.StatusBadRequest, &m.ID, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "missing Mcp-Session-Id: initialize first, or send a 2026-07-28 request"})
	default:
		ss := s.httpSession(sessionID)
		if ss == nil {
			writeRPCError(w, http.StatusNotFound, &m.ID, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "unknown or ended session"})
			return
		}
		s.postInSession(w, r, ss, m)
	}
}

// servesStateless reports whether v names a revision s serves without a
// handshake (2026-07-28).
func (s *Server) servesStateless(v string) bool {
	r, ok := lookupRevision(v)
	return ok && !handshakeEra(r) && s.serves(v)
}

func (s *Server) httpSession(id string) *serverSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.httpByID[id]
	if ss == nil || ss.ctx.Err() != nil {
		return nil
	}
	return ss
}

// postStateless serves one 2026-07-28 request, as a session of its own
// that ends when its response stream closes.
func (s *Server) postStateless(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, version string) {
	if m.IsNotification() {
		// This revision defines no client notification over HTTP (a
		// cancel is the closed stream): accepted, and dropped.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if !m.IsRequest() {
		writeRPCError(w, http.StatusBadRequest, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "2026-07-28 over HTTP takes requests only"})
		return
	}
	if reason := headerMismatch(r, m, version); reason != "" {
		writeRPCError(w, http.StatusBadRequest, &m.ID, &jsonrpc.Error{Code: jsonrpc.CodeHeaderMismatch, Message: reason})
		return
	}
	ss := newServerSession(s, context.Background(), "http")
	if _, rerr := ss.decodeParams(m); rerr != nil {
		// Its _meta is refused (a revision not served, no capabilities):
		// 400, as the revision says.
		ss.end(nil)
		writeRPCError(w, http.StatusBadRequest, &m.ID, rerr)
		return
	}
	if !s.track(ss) {
		http.Error(w, "mcp: server closed", http.StatusServiceUnavailable)
		return
	}
	defer s.untrack(ss)
	defer ss.end(nil)
	s.respond(w, r, ss, m, true)
}

// headerMismatch checks the routing headers of a 2026-07-28 request
// against its body; "" if they agree.
func headerMismatch(r *http.Request, m *jsonrpc.Message, version string) string {
	if v := r.Header.Get("MCP-Protocol-Version"); v != version {
		return fmt.Sprintf("MCP-Protocol-Version %q does not match _meta's %q", v, version)
	}
	if v := r.Header.Get("Mcp-Method"); v != m.Method {
		return fmt.Sprintf("Mcp-Method %q does not match method %q", v, m.Method)
	}
	if m.Method == "tools/call" {
		var p struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(m.Params, &p)
		if v := decodeHeaderValue(r.Header.Get("Mcp-Name")); v != p.Name {
			return fmt.Sprintf("Mcp-Name %q does not match name %q", v, p.Name)
		}
	}
	return ""
}

// decodeHeaderValue reads an Mcp-* header's value, plain or in the
// =?base64?…?= form.
func decodeHeaderValue(v string) string {
	if inner, ok := strings.CutPrefix(v, "=?base64?"); ok {
		if inner, ok := strings.CutSuffix(inner, "?="); ok {
			if b, err := base64.StdEncoding.DecodeString(inner); err == nil {
				return string(b)
			}
		}
	}
	return v
}

// postInSession serves a message of a handshake-era session.
func (s *Server) postInSession(w http.ResponseWriter, r *http.Request, ss *serverSession, m *jsonrpc.Message) {
	if !m.IsRequest() {
		ss.receive(m)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	s.respond(w, r, ss, m, false)
}

// respond serves request m of session ss and writes its response: one
// JSON body, or an event stream where the request sends messages before
// its response (subscriptions/listen). The request is cancelled with
// [ErrClientGone] if the client goes away first. A stateless (2026-07-28)
// request's error gets the HTTP status its revision gives its code.
func (s *Server) respond(w http.ResponseWriter, r *http.Request, ss *serverSession, m *jsonrpc.Message, stateless bool) {
	ctx, cancel, finish := ss.begin(incomingTrace(r.Context(), m.Params, r.Header), m)
	defer finish()
	stop := context.AfterFunc(r.Context(), func() { cancel(ErrClientGone) })
	defer stop()

	var out serverOut
	stream := m.Method == "subscriptions/listen" && acceptsEventStream(r)
	var wmu sync.Mutex
	closed := false // the handler is returning: nothing more may be written
	defer func() {
		wmu.Lock()
		closed = true
		wmu.Unlock()
	}()
	if stream {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(w).Flush()
		out = func(msg *jsonrpc.Message) error {
			data, err := jsonrpc.Encode(msg)
			if err != nil {
				return err
			}
			wmu.Lock()
			defer wmu.Unlock()
			if closed {
				return ErrClientGone
			}
			if err := sse.WriteEvent(w, "", data); err != nil {
				return err
			}
			return http.NewResponseController(w).Flush()
		}
	}
	resp := ss.serve(ctx, m, out)
	if resp == nil || r.Context().Err() != nil {
		if !stream && resp == nil {
			w.WriteHeader(http.StatusNoContent) // cancelled: nothing to say
		}
		return
	}
	if stream {
		_ = out(resp)
		return
	}
	data, err := jsonrpc.Encode(resp)
	if err != nil {
		http.Error(w, "mcp: encoding the response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if stateless && resp.Error != nil {
		w.WriteHeader(statelessErrorStatus(resp.Error.Code))
	}
	_, _ = w.Write(data)
}

// statelessErrorStatus is the HTTP status of a 2026-07-28 error response
// with code: 404 for a method not found, 400 for a request refused for its
// _meta, its headers, its revision or a capability it lacks, and 200 for
// the rest (a tool's refusal, an unknown tool), as the revision leaves
// them.
func statelessErrorStatus(code int64) int {
	switch code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeHeaderMismatch, jsonrpc.CodeUnsupportedProtocolVersion, jsonrpc.CodeMissingClientCapability:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

func acceptsEventStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		if strings.Contains(v, "text/event-stream") {
			return true
		}
	}
	return false
}

// get opens a session's standalone stream, which carries what the server
// tells the client unasked (list changes) until the client closes it or
// the session ends.
func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		w.Header().Set("Allow", "POST")
		http.Error(w, "mcp: no session: a standalone stream needs Mcp-Session-Id", http.StatusMethodNotAllowed)
		return
	}
	ss := s.httpSession(id)
	if ss == nil {
		http.Error(w, "mcp: unknown or ended session", http.StatusNotFound)
		return
	}
	var wmu sync.Mutex
	gone := make(chan struct{})
	notify := func(m *jsonrpc.Message) error {
		data, err := jsonrpc.Encode(m)
		if err != nil {
			return err
		}
		wmu.Lock()
		defer wmu.Unlock()
		select {
		case <-gone:
			return ErrClientGone
		default:
		}
		if err := sse.WriteEvent(w, "", data); err != nil {
			return err
		}
		return http.NewResponseController(w).Flush()
	}
	// The headers go out before a notification can: wmu is held until
	// they have.
	wmu.Lock()
	ss.mu.Lock()
	if ss.notify != nil {
		ss.mu.Unlock()
		wmu.Unlock()
		http.Error(w, "mcp: the session's stream is open already", http.StatusConflict)
		return
	}
	ss.notify = notify
	ss.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_ = http.NewResponseController(w).Flush()
	wmu.Unlock()
	select {
	case <-r.Context().Done():
	case <-ss.ctx.Done():
	}
	ss.mu.Lock()
	ss.notify = nil
	ss.mu.Unlock()
	wmu.Lock()
	close(gone) // nothing more is written once the handler returns
	wmu.Unlock()
}

// deleteSession ends a session at its client's request, cancelling what
// it has in flight.
func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	ss := s.httpSession(r.Header.Get("Mcp-Session-Id"))
	if ss == nil {
		http.Error(w, "mcp: unknown or ended session", http.StatusNotFound)
		return
	}
	ss.end(ErrClientGone)
	s.untrack(ss)
	w.WriteHeader(http.StatusNoContent)
}

func writeRPCError(w http.ResponseWriter, status int, id *jsonrpc.ID, e *jsonrpc.Error) {
	m := &jsonrpc.Message{Error: e}
	if id != nil {
		m.ID = *id
	}
	data, _ := jsonrpc.Encode(m)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}
