package mcptest

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
	"github.com/andonhq/andon/mcp/internal/sse"
)

// get serves GET: the event stream of an HTTP+SSE session, or the
// resumption of a handshake-era response stream (Last-Event-ID). A
// Streamable HTTP server without either answers 405.
func (h *httpHandler) get(w http.ResponseWriter, r *http.Request) {
	if last := r.Header.Get("Last-Event-ID"); last != "" && h.opts.serves(Sessions) {
		sess := h.session(r.Header.Get("Mcp-Session-Id"))
		if sess == nil {
			http.Error(w, "unknown session", http.StatusNotFound)
			return
		}
		h.s.rec.add(Record{Kind: Received, Method: "GET", Session: r.Header.Get("Mcp-Session-Id"), Reason: "Last-Event-ID " + last, Header: r.Header.Clone()})
		h.resumeStream(w, r, sess, last)
		return
	}
	if !h.opts.serves(LegacySSE) {
		http.Error(w, "no standalone event stream", http.StatusMethodNotAllowed)
		return
	}
	id, sess := h.newSession()
	h.s.rec.add(Record{Kind: Received, Method: "GET", Session: id, Header: r.Header.Clone()})
	events := &eventStream{w: w, aborted: make(chan struct{})}
	sess.events = events
	endpoint := r.URL.Path + "?sessionId=" + id
	// Under the stream's lock: once the endpoint is out, POSTs write here.
	events.mu.Lock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "event: endpoint\ndata: %s\n\n", endpoint)
	http.NewResponseController(w).Flush()
	events.mu.Unlock()
	// Closing the GET stream ends the session, and with it every handler.
	select {
	case <-r.Context().Done():
	case <-sess.ctx.Done():
	case <-events.aborted:
	}
	events.close()
	sess.cancel()
	h.mu.Lock()
	delete(h.sessions, id)
	h.mu.Unlock()
}

// postLegacy serves a POST to an HTTP+SSE endpoint: 202, and whatever the
// message produces goes on the session's GET stream.
func (h *httpHandler) postLegacy(w http.ResponseWriter, r *http.Request, body []byte) {
	id := r.URL.Query().Get("sessionId")
	sess := h.session(id)
	if sess == nil || sess.events == nil {
		h.reject(w, http.StatusNotFound, "unknown session "+id)
		return
	}
	m, err := jsonrpc.Decode(body)
	if err != nil {
		h.s.rec.add(Record{Kind: Received, Reason: err.Error(), Raw: jsonOrString(body), Session: id})
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rec := Record{Kind: Received, Method: m.Method, Params: m.Params, Raw: jsonOrString(body), Session: id, Header: r.Header.Clone()}
	if m.ID.IsValid() {
		rec.ID = idKey(m.ID)
	}
	h.s.rec.add(rec)
	if !m.IsRequest() {
		h.acceptMessage(w, r, sess, m)
		return
	}
	w.WriteHeader(http.StatusAccepted)
	sess.conn.handleMessage(sess.ctx, m, sess.events)
}

// eventStream is the outbox of an HTTP+SSE session: its GET stream.
type eventStream struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	closed  bool
	aborted chan struct{}
}

func (e *eventStream) write(m *jsonrpc.Message) error {
	data, err := jsonrpc.Encode(m)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return fmt.Errorf("mcptest: event stream closed")
	}
	if err := sse.WriteEvent(e.w, "", data); err != nil {
		return err
	}
	return http.NewResponseController(e.w).Flush()
}

func (e *eventStream) writeRaw(pieces ...[]byte) {
	writeRawEvent(&e.mu, func() bool { return e.closed }, e.w, pieces)
}

// abort ends the GET stream, and so the whole HTTP+SSE session.
func (e *eventStream) abort() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.closed {
		e.closed = true
		close(e.aborted)
	}
}

func (e *eventStream) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
}

// writeRawEvent writes pieces as the data of one event, the pieces
// separately and 20ms apart, so that the event is split across writes.
func writeRawEvent(mu *sync.Mutex, closed func() bool, w http.ResponseWriter, pieces [][]byte) {
	for i, p := range pieces {
		if i > 0 {
			time.Sleep(20 * time.Millisecond)
		}
		if i == 0 {
			p = append([]byte("event: message\ndata: "), p...)
		}
		if i == len(pieces)-1 {
			p = append([]byte(strings.TrimRight(string(p), "\n")), '\n', '\n')
		}
		mu.Lock()
		if !closed() {
			w.Write(p)
			http.NewResponseController(w).Flush()
		}
		mu.Unlock()
	}
}

// resumable holds the events of a response stream that the server ended
// early (2025-11-25 polling), for a client to resume with GET.
type resumable struct {
	streamID string
	mu       sync.Mutex
	events   [][]byte
	changed  chan struct{}
	final    bool
}

func (r *resumable) write(data []byte, final bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, data)
	r.final = r.final || final
	close(r.changed)
	r.changed = make(chan struct{})
}

// prime starts the response as an event stream with a priming event and a
// retry hint, then lets the handler end it: the rest is kept for GET.
func (o *responseOut) prime(sess *httpSession, retry time.Duration) {
	res := &resumable{streamID: strconv.FormatInt(time.Now().UnixNano(), 36), changed: make(chan struct{})}
	sess.resume = res
	o.mu.Lock()
	defer o.mu.Unlock()
	o.startLocked()
	fmt.Fprintf(o.w, "id: %s-0\nretry: %d\ndata:\n\n", res.streamID, retry.Milliseconds())
	http.NewResponseController(o.w).Flush()
	o.primed = res
	close(o.detached)
}

// resumeStream replays, then follows, a primed stream after Last-Event-ID.
func (h *httpHandler) resumeStream(w http.ResponseWriter, r *http.Request, sess *httpSession, last string) {
	res := sess.resume
	streamID, n, ok := strings.Cut(last, "-")
	from, err := strconv.Atoi(n)
	if res == nil || !ok || err != nil || streamID != res.streamID {
		http.Error(w, "unknown stream", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for i := from; ; {
		res.mu.Lock()
		events, final, changed := res.events[min(i, len(res.events)):], res.final, res.changed
		res.mu.Unlock()
		for _, data := range events {
			i++
			fmt.Fprintf(w, "id: %s-%d\nevent: message\ndata: %s\n\n", res.streamID, i, data)
		}
		http.NewResponseController(w).Flush()
		if final {
			return
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			h.s.rec.add(Record{Kind: StreamClosed, Method: "GET"})
			return
		case <-sess.ctx.Done():
			return
		}
	}
}

// trackHTTP lets Close end a session's handlers.
func (s *Server) trackHTTP(sess *httpSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.httpSessions == nil {
		s.httpSessions = map[*httpSession]bool{}
	}
	s.httpSessions[sess] = true
}

// ExpireSessions ends every HTTP session, as a server that forgets them
// does: later requests in them get 404.
func (s *Server) ExpireSessions() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for sess := range s.httpSessions {
		sess.cancel()
	}
}

// stopHTTP ends every HTTP session and waits for its handlers.
func (s *Server) stopHTTP() {
	s.mu.Lock()
	sessions := s.httpSessions
	s.httpSessions = nil
	s.mu.Unlock()
	for sess := range sessions {
		sess.cancel()
		sess.conn.handlers.Wait()
	}
}
