package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpgoserver "github.com/mark3labs/mcp-go/server"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/andonhq/andon/mcp"
)

// The HTTP peers: go-sdk v1.8.0 and mcp-go v1.2.1 servers, each served by an
// httptest server on 127.0.0.1 in the test's own process, behind a recorder
// of every HTTP request that reaches them.

// eventLog collects the slow tool's events from a server in this process.
type eventLog struct {
	mu     sync.Mutex
	events []serverEvent
}

func (l *eventLog) add(kind, tag string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, serverEvent{kind: kind, tag: tag, at: at.UnixNano()})
}

func (l *eventLog) find(kind, tag string) (serverEvent, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ev := range l.events {
		if ev.kind == kind && ev.tag == tag {
			return ev, true
		}
	}
	return serverEvent{}, false
}

// wait polls until the server has reported kind for tag.
func (l *eventLog) wait(t testing.TB, kind, tag string) serverEvent {
	t.Helper()
	deadline := time.Now().Add(pollDeadline)
	for {
		if ev, ok := l.find(kind, tag); ok {
			return ev
		}
		if time.Now().After(deadline) {
			l.mu.Lock()
			defer l.mu.Unlock()
			t.Fatalf("the server did not report %s %s within %v; its events: %+v", kind, tag, pollDeadline, l.events)
		}
		time.Sleep(time.Millisecond)
	}
}

// wireRequest is one HTTP request as it reached a peer server.
type wireRequest struct {
	at         time.Time // when it arrived, before the peer saw it
	httpMethod string
	rpcMethod  string          // the JSON-RPC method of a POSTed message
	id         json.RawMessage // its id; nil for a notification
	params     json.RawMessage
	session    string // Mcp-Session-Id header, or the sessionId query of an HTTP+SSE POST
	version    string // MCP-Protocol-Version header
	status     atomic.Int32

	mu   sync.Mutex
	resp []byte // what the peer wrote in the response body, up to maxCapture
}

// maxCapture bounds the response body a wireRequest keeps.
const maxCapture = 1 << 20

// response returns the response body so far.
func (r *wireRequest) response() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.resp)
}

// wireLog records every request a peer receives.
type wireLog struct {
	mu   sync.Mutex
	reqs []*wireRequest
}

func (w *wireLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rec := &wireRequest{
			at:         time.Now(),
			httpMethod: r.Method,
			session:    r.Header.Get("Mcp-Session-Id"),
			version:    r.Header.Get("MCP-Protocol-Version"),
		}
		if rec.session == "" {
			// The session of an HTTP+SSE POST: mcp-go calls it sessionId,
			// go-sdk sessionid.
			q := r.URL.Query()
			rec.session = q.Get("sessionId") + q.Get("sessionid")
		}
		if r.Method == http.MethodPost && r.Body != nil {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m struct {
				Method string          `json:"method"`
				ID     json.RawMessage `json:"id"`
				Params json.RawMessage `json:"params"`
			}
			if json.Unmarshal(body, &m) == nil {
				rec.rpcMethod, rec.id, rec.params = m.Method, m.ID, m.Params
			}
		}
		w.mu.Lock()
		w.reqs = append(w.reqs, rec)
		w.mu.Unlock()
		h.ServeHTTP(statusWriter{rw, rec}, r)
	})
}

// all returns every request so far, in order of arrival.
func (w *wireLog) all() []*wireRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.reqs)
}

// posts returns the POSTed messages of JSON-RPC method rpcMethod.
func (w *wireLog) posts(rpcMethod string) []*wireRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*wireRequest
	for _, r := range w.reqs {
		if r.httpMethod == http.MethodPost && r.rpcMethod == rpcMethod {
			out = append(out, r)
		}
	}
	return out
}

// waitPost polls until a POST of rpcMethod matching match has arrived.
func (w *wireLog) waitPost(t testing.TB, rpcMethod string, match func(*wireRequest) bool) *wireRequest {
	t.Helper()
	deadline := time.Now().Add(pollDeadline)
	for {
		for _, r := range w.posts(rpcMethod) {
			if match(r) {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no matching %s POST reached the server within %v; it got: %s", rpcMethod, pollDeadline, w)
		}
		time.Sleep(time.Millisecond)
	}
}

func (w *wireLog) String() string {
	var b strings.Builder
	for _, r := range w.all() {
		b.WriteString("\n  " + r.httpMethod + " " + r.rpcMethod + " id=" + string(r.id) + " session=" + r.session + " version=" + r.version)
	}
	return b.String()
}

// countWritten returns how often the peer wrote a message of JSON-RPC method
// to any response (POST responses and HTTP+SSE GET streams alike) before it
// wrote before (the whole response if before is "" or not in it).
func (w *wireLog) countWritten(rpcMethod, before string) int {
	n := 0
	for _, r := range w.all() {
		body := r.response()
		if i := bytes.Index(body, []byte(before)); before != "" && i >= 0 {
			body = body[:i]
		}
		n += bytes.Count(body, []byte(`"method":"`+rpcMethod+`"`))
	}
	return n
}

// waitStatus returns the response's status, waiting a moment for it: the
// client can read a response before the recorder has seen its status (a
// peer that writes no explicit header gets it from net/http after its
// handler returns).
func (r *wireRequest) waitStatus() int32 {
	s := r.status.Load()
	for deadline := time.Now().Add(5 * time.Second); s == 0 && time.Now().Before(deadline); s = r.status.Load() {
		time.Sleep(time.Millisecond)
	}
	return s
}

// statusWriter records the status and body of a response, and passes Flush
// through (both peers stream responses).
type statusWriter struct {
	http.ResponseWriter
	rec *wireRequest
}

func (s statusWriter) WriteHeader(code int) {
	s.rec.status.CompareAndSwap(0, int32(code))
	s.ResponseWriter.WriteHeader(code)
}

func (s statusWriter) Write(p []byte) (int, error) {
	s.rec.status.CompareAndSwap(0, http.StatusOK)
	s.rec.mu.Lock()
	if len(s.rec.resp)+len(p) <= maxCapture {
		s.rec.resp = append(s.rec.resp, p...)
	}
	s.rec.mu.Unlock()
	return s.ResponseWriter.Write(p)
}

func (s statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// The peer servers, each a kind of HTTP endpoint.
const (
	// go-sdk StreamableHTTPHandler, Stateless and
	// PropagateRequestCancellation: serves 2026-07-28, and cancels a
	// handler when its POST goes away.
	peerGoSDKStateless = "gosdk-stateless"
	// go-sdk StreamableHTTPHandler, Stateless only (the default): serves
	// 2026-07-28, and never cancels a handler.
	peerGoSDKStatelessNoPropagate = "gosdk-stateless-nopropagate"
	// go-sdk StreamableHTTPHandler with default options: sessions; serves
	// 2025-11-25 and older (server/discover does not list 2026-07-28).
	peerGoSDKStateful = "gosdk-stateful"
	// go-sdk SSEHandler: HTTP+SSE (2024-11-05 transport).
	peerGoSDKSSE = "gosdk-sse"
	// mcp-go StreamableHTTPServer, WithStateful: serves 2026-07-28
	// (stateless, per request) and the handshake-era revisions with real
	// sessions, on one endpoint.
	peerMCPGoStreamable = "mcpgo-streamable"
	// mcp-go SSEServer: HTTP+SSE.
	peerMCPGoSSE = "mcpgo-sse"
)

// peerServer is a running peer.
type peerServer struct {
	url    string // the MCP endpoint to give andon
	events *eventLog
	wire   *wireLog
	conns  atomic.Int64 // TCP connections accepted so far
}

// startPeer starts the peer named kind on 127.0.0.1. It ends with t.
func startPeer(t testing.TB, kind string) *peerServer {
	t.Helper()
	return startPeerWith(t, kind, nil)
}

// startPeerWith is startPeer with the peer's handler wrapped by wrap, if
// not nil, inside the recorder.
func startPeerWith(t testing.TB, kind string, wrap func(http.Handler) http.Handler) *peerServer {
	t.Helper()
	p := &peerServer{events: &eventLog{}, wire: &wireLog{}}
	sink := &eventSink{log: p.events}
	quiet := slog.New(slog.DiscardHandler)
	var h http.Handler
	path := ""
	switch kind {
	case peerGoSDKStateless, peerGoSDKStatelessNoPropagate:
		s := newGoSDKServer(sink)
		h = gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return s }, &gosdk.StreamableHTTPOptions{
			Stateless:                    true,
			PropagateRequestCancellation: kind == peerGoSDKStateless,
		})
	case peerGoSDKStateful:
		s := newGoSDKServer(sink)
		h = gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return s }, nil)
	case peerGoSDKSSE:
		s := newGoSDKServer(sink)
		h = gosdk.NewSSEHandler(func(*http.Request) *gosdk.Server { return s }, nil)
	case peerMCPGoStreamable:
		h = mcpgoserver.NewStreamableHTTPServer(newMCPGoServer(sink),
			mcpgoserver.WithStateful(true),
			mcpgoserver.WithStreamableHTTPLogger(quiet))
		path = "/mcp"
	case peerMCPGoSSE:
		// Relative endpoint URLs: the server's address is not known
		// before it starts, and andon resolves them against its URL.
		h = mcpgoserver.NewSSEServer(newMCPGoServer(sink), mcpgoserver.WithUseFullURLForMessageEndpoint(false))
		path = "/sse"
	default:
		t.Fatalf("unknown peer %q", kind)
	}
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewUnstartedServer(p.wire.wrap(h))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			p.conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	p.url = srv.URL + path
	return p
}

// httpClient returns an HTTP client of its own, whose idle connections are
// closed with t (after the MCP client that uses it, which is registered
// later).
func httpClient(t testing.TB) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// connectHTTP connects andon's client to p, pinned to pin ("" negotiates).
// The client is closed with t.
func connectHTTP(t testing.TB, p *peerServer, pin string) *mcp.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pollDeadline)
	defer cancel()
	c, err := mcp.Connect(ctx, mcp.HTTP(p.url, httpClient(t)), &mcp.ClientOptions{ProtocolVersion: pin, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("connecting to %s (pinned %q): %v", p.url, pin, err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("closing the client: %v", err)
		}
	})
	return c
}
