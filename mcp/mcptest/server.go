// Package mcptest provides a scriptable MCP server for tests and demos.
//
// The server speaks every revision andon does — the 2026-07-28 stateless
// model (server/discover, per-request _meta) and the initialize handshake of
// 2024-11-05 through 2025-11-25 — over newline-delimited stdio framing. It
// records every message it receives and what its tools did, in order, so a
// test can assert exactly what went over the wire, and its tools inject the
// faults a client must survive.
//
// Tools:
//
//   - echo {text}: returns text, and the arguments as structured content.
//   - slow {ms=10000}: sleeps, honouring cancellation; records ToolCancelled
//     with the time it saw the cancel. Reports progress once it has started
//     when the request carries a progress token.
//   - stubborn {ms=1000}: sleeps, ignoring cancellation, then answers anyway.
//   - progress {count=3, interval_ms=10}: reports count progress steps, then answers.
//   - late {ms=10000}: waits to be cancelled, then sends progress and a
//     result for the cancelled request anyway (recording LateReply).
//   - fail {message}: a result with isError set.
//   - big {bytes=1048576}: a text result of the given size.
//   - ask {what, message, first_ms, then_ms}: asks the client for its
//     roots (a roots/list request on handshake-era revisions, an
//     input_required result on 2026-07-28, after first_ms), then answers
//     "roots: {…}" (after then_ms on 2026-07-28, honouring cancellation).
//     With what "elicitation" it asks the client's user for a name instead
//     (elicitation/create, form mode, message as the question) and answers
//     "elicitation: {the client's answer}"; with what "sampling" it asks
//     the client's model for a message (sampling/createMessage, message as
//     the prompt) and answers "sampling: …". A call cancelled while the
//     client answers cancels the question (notifications/cancelled).
//   - elicit {message, schema, mode, url, log} (only with Options.Elicit): asks the user a question
//     (elicitation/create on handshake-era revisions, an input_required
//     result on 2026-07-28), records the answer (ElicitAnswered) and
//     returns it as "elicit: ACTION CONTENT".
//   - crash: the connection ends mid-call (the executable exits with status 3).
//   - garbage: writes a line that is not JSON, then answers.
//   - split: writes its answer in two pieces, 20ms apart.
//   - unknown_id: writes a response for a request id never sent, then answers.
//   - bad_result: answers with a result that is not a tool result.
//   - route {region, shard}: annotated with x-mcp-header, so a 2026-07-28
//     client sends them as Mcp-Param-* headers; over HTTP the server checks
//     them against the body.
//   - bad_header (only with Options.InvalidTool): an invalid x-mcp-header.
//   - stderr {lines=3}: writes noise to stderr, then answers.
//
// Resources, prompts, completion and logging/setLevel are served too; see
// resources.go, prompts.go and complete.go.
//
// Use [NewServer] and [Server.Transport] in-process, or run [Main] as a
// subprocess (andon mcptest serve).
package mcptest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/internal/jsonrpc"
)

// Options configure a Server. The zero value serves every revision.
type Options struct {
	// Versions are the revisions served. Nil means every revision andon
	// speaks. Without 2026-07-28, server/discover is answered with
	// method-not-found, as a handshake-era server would.
	Versions []string
	// SilentDiscover makes the server ignore server/discover, as some
	// handshake-era servers do, instead of answering it with an error.
	SilentDiscover bool
	// InvalidTool adds bad_header, a tool whose x-mcp-header annotation
	// breaks the rules, which a 2026-07-28 client must leave out.
	InvalidTool bool
	// Elicit adds elicit, a tool that asks the user a question (see
	// elicit.go); off by default, so that the tools a client lists stay
	// the same for the tests that count them.
	Elicit bool
	// RefuseFirstDiscover answers the first server/discover with
	// UnsupportedProtocolVersion (-32022) listing Versions, as a server
	// does that wants the client to retry with a version it lists.
	RefuseFirstDiscover bool
	// PageSize splits every listing (tools, resources, templates, prompts)
	// into pages of this many items. Zero means
	// one page.
	PageSize int
	// Stderr receives the stderr tool's noise. Nil means discard it.
	Stderr io.Writer
	// Stall lists methods the server records and then never answers, as a
	// hung server does: "server/discover", "initialize", "tools/list",
	// "tools/call" …; over HTTP also notifications, whose POST then gets
	// no reply ("notifications/initialized"), and "DELETE", the request
	// that ends a session. A stalled HTTP request is held until the client
	// goes away (recorded as StreamClosed) or the server closes.
	Stall []string
	// Tasks offers the task tools (see tasks.go) and declares tasks: on
	// 2025-11-25 capabilities.tasks, on 2026-07-28 the
	// io.modelcontextprotocol/tasks extension.
	Tasks bool
	// ListTTL and ListCacheScope are the ttlMs and cacheScope of every
	// 2026-07-28 listing (tools, resources, templates, prompts). Zero and
	// empty mean 0 (not reusable) and "private".
	ListTTL        time.Duration
	ListCacheScope string
}

// Server is a scriptable MCP server. One Server may serve many connections;
// they share its record.
type Server struct {
	opts Options
	rec  *recorder

	done chan struct{} // closed by Close: stalled requests let go

	mu           sync.Mutex
	discovered   bool // a server/discover was answered or refused
	conns        map[*serverConn]bool
	httpSessions map[*httpSession]bool
	listeners    map[*listener]bool // 2026-07-28 subscriptions/listen streams open now
	wg           sync.WaitGroup
	tools        sync.WaitGroup // every tool handler, of every connection
	closing      bool

	taskStore taskStore // with Options.Tasks
}

// NewServer returns a server. A nil opts is the zero Options.
func NewServer(opts *Options) *Server {
	s := &Server{rec: newRecorder(), conns: map[*serverConn]bool{}, done: make(chan struct{})}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Versions == nil {
		s.opts.Versions = mcp.SupportedVersions()
	}
	if s.opts.Stderr == nil {
		s.opts.Stderr = io.Discard
	}
	return s
}

// Transport returns a client transport connected to a new in-process
// connection of s, over [net.Pipe].
func (s *Server) Transport() mcp.Transport {
	client, server := net.Pipe()
	s.mu.Lock()
	closing := s.closing
	if !closing {
		s.wg.Add(1)
	}
	s.mu.Unlock()
	if closing {
		server.Close()
		return mcp.Stream(client)
	}
	go func() {
		defer s.wg.Done()
		s.Serve(context.Background(), server, server)
		server.Close()
	}()
	return mcp.Stream(client)
}

// Close ends every connection and waits for their handlers.
func (s *Server) Close() {
	s.mu.Lock()
	if !s.closing {
		close(s.done)
	}
	s.closing = true
	for c := range s.conns {
		c.stop()
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.stopHTTP()
	s.stopTasks()
	s.tools.Wait()
}

// stalls reports whether the server is to leave method unanswered.
func (s *Server) stalls(method string) bool { return slices.Contains(s.opts.Stall, method) }

// errCrash ends a connection on behalf of the crash tool.
var errCrash = errors.New("mcptest: crash requested")

// Serve serves one connection, reading from r and writing to w, until r
// ends, ctx is done, or the crash tool is called (then it returns an error).
// In-flight tool handlers are cancelled when it returns.
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	ctx, cancel := context.WithCancelCause(ctx)
	c := &serverConn{s: s, w: w, inflight: map[string]context.CancelCauseFunc{}, cancel: cancel}
	s.mu.Lock()
	s.conns[c] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
	defer c.handlers.Wait()
	defer cancel(io.EOF)

	frames := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		fr := jsonrpc.NewFrameReader(r, 64<<20)
		for {
			f, err := fr.Next()
			if err != nil {
				readErr <- err
				return
			}
			select {
			case frames <- append([]byte(nil), f...):
			case <-ctx.Done():
				readErr <- ctx.Err()
				return
			}
		}
	}()
	for {
		select {
		case f := <-frames:
			c.handle(ctx, f)
		case err := <-readErr:
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), errCrash) {
				return errCrash
			}
			return nil
		}
	}
}

// serverConn is one connection being served.
type serverConn struct {
	s        *Server
	w        io.Writer
	wmu      sync.Mutex
	mu       sync.Mutex
	inflight map[string]context.CancelCauseFunc // by request id
	pending  map[string]chan *jsonrpc.Message   // server→client requests, by id
	nextID   int
	logLevel string          // set by logging/setLevel; empty means every level
	subs     map[string]bool // resources subscribed to, by URI
	handlers sync.WaitGroup
	cancel   context.CancelCauseFunc
}

func (c *serverConn) stop() { c.cancel(io.EOF) }

// outbox is where the messages about one request go: the connection on
// stdio, the request's own response on HTTP.
type outbox interface {
	write(m *jsonrpc.Message) error
	// writeRaw writes bytes as they are, for the fault-injecting tools;
	// pieces go out separately, 20ms apart.
	writeRaw(pieces ...[]byte)
}

func (c *serverConn) write(m *jsonrpc.Message) error {
	data, err := jsonrpc.Encode(m)
	if err != nil {
		return err
	}
	c.s.rec.sync() // what the client sees next, the record file has before
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.w.Write(append(data, '\n'))
	return err
}

func (c *serverConn) writeRaw(pieces ...[]byte) {
	c.s.rec.sync()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for i, p := range pieces {
		if i > 0 {
			time.Sleep(20 * time.Millisecond)
		}
		c.w.Write(p)
	}
}

func (c *serverConn) handle(ctx context.Context, frame []byte) {
	m, err := jsonrpc.Decode(frame)
	if err != nil {
		c.s.rec.add(Record{Kind: Received, Reason: err.Error(), Raw: jsonOrString(frame)})
		c.write(&jsonrpc.Message{Error: &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: err.Error()}})
		return
	}
	rec := Record{Kind: Received, Method: m.Method, Params: m.Params, Raw: jsonOrString(frame)}
	if m.ID.IsValid() {
		rec.ID = idKey(m.ID)
	}
	c.s.rec.add(rec)
	c.handleMessage(ctx, m, c)
}

// handleMessage acts on a message already recorded: a response to one of
// the server's requests, a notification, or a request, whose messages go to
// out.
func (c *serverConn) handleMessage(ctx context.Context, m *jsonrpc.Message, out outbox) {
	switch {
	case m.IsResponse():
		c.mu.Lock()
		ch := c.pending[idKey(m.ID)]
		delete(c.pending, idKey(m.ID))
		c.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	case m.IsNotification():
		if m.Method == "notifications/cancelled" {
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
				Reason    string          `json:"reason"`
			}
			if json.Unmarshal(m.Params, &p) == nil {
				c.mu.Lock()
				cancel := c.inflight[string(p.RequestID)]
				c.mu.Unlock()
				if cancel != nil {
					cancel(errors.New(p.Reason))
				}
			}
		}
	default:
		c.serveRequest(ctx, m, out)
	}
}

func idKey(id jsonrpc.ID) string {
	b, _ := id.MarshalJSON()
	return string(b)
}

func jsonOrString(b []byte) json.RawMessage {
	if json.Valid(b) {
		return append(json.RawMessage(nil), b...)
	}
	q, _ := json.Marshal(string(b))
	return q
}

// requestEra reads a request's _meta: its 2026-07-28 protocol version, if any.
type requestMeta struct {
	ProtocolVersion    string          `json:"io.modelcontextprotocol/protocolVersion"`
	ClientCapabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
	ProgressToken      json.RawMessage `json:"progressToken"`
	// LogLevel is the level a 2026-07-28 request asks log messages at;
	// without it the server sends it none.
	LogLevel string `json:"io.modelcontextprotocol/logLevel"`
}

type baseParams struct {
	Meta           requestMeta                `json:"_meta"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
	RequestState   string                     `json:"requestState"`
}

func (c *serverConn) serveRequest(ctx context.Context, m *jsonrpc.Message, out outbox) {
	var base baseParams
	if len(m.Params) > 0 {
		if err := json.Unmarshal(m.Params, &base); err != nil {
			reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "params: " + err.Error()})
			return
		}
	}
	modern := base.Meta.ProtocolVersion != ""
	if modern {
		if !slices.Contains(c.s.opts.Versions, base.Meta.ProtocolVersion) {
			data, _ := json.Marshal(map[string]any{"supported": c.s.opts.Versions, "requested": base.Meta.ProtocolVersion})
			reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeUnsupportedProtocolVersion, Message: "unsupported protocol version", Data: data})
			return
		}
		if base.Meta.ClientCapabilities == nil {
			reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing _meta io.modelcontextprotocol/clientCapabilities"})
			return
		}
	}
	if c.s.stalls(m.Method) {
		return // recorded, never answered
	}
	switch m.Method {
	case "server/discover":
		if c.s.opts.SilentDiscover {
			return
		}
		c.s.mu.Lock()
		first := !c.s.discovered
		c.s.discovered = true
		c.s.mu.Unlock()
		if first && c.s.opts.RefuseFirstDiscover {
			data, _ := json.Marshal(map[string]any{"supported": c.s.opts.Versions, "requested": base.Meta.ProtocolVersion})
			reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeUnsupportedProtocolVersion, Message: "unsupported protocol version", Data: data})
			return
		}
		if !slices.Contains(c.s.opts.Versions, mcp.Version20260728) {
			reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: server/discover"})
			return
		}
		reply(out, m.ID, map[string]any{
			"supportedVersions": c.s.opts.Versions,
			"capabilities":      c.s.capabilities(),
			"instructions":      "mcptest: a scriptable test server",
			"ttlMs":             0,
			"cacheScope":        "private",
			"resultType":        "complete",
			"_meta":             map[string]any{"io.modelcontextprotocol/serverInfo": serverInfo},
		}, nil)
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		json.Unmarshal(m.Params, &p)
		version := ""
		for _, v := range c.s.opts.Versions {
			if v != mcp.Version20260728 && (version == "" || v == p.ProtocolVersion) {
				version = v
			}
		}
		if version == "" {
			reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no handshake-era revision is served"})
			return
		}
		reply(out, m.ID, map[string]any{
			"protocolVersion": version,
			"capabilities":    c.s.handshakeCapabilities(),
			"serverInfo":      serverInfo,
		}, nil)
	case "ping":
		if modern {
			reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: ping"})
			return
		}
		reply(out, m.ID, map[string]any{}, nil)
	case "tools/list":
		c.listTools(m, modern, out)
	case "tools/call":
		c.startTool(ctx, m, base, modern, out)
	case "resources/list":
		listPage(c, m, "resources", resourceList(), modern, out)
	case "resources/templates/list":
		listPage(c, m, "resourceTemplates", resourceTemplates, modern, out)
	case "resources/read":
		c.startRead(ctx, m, base.Meta, modern, out)
	case "prompts/list":
		listPage(c, m, "prompts", promptList, modern, out)
	case "prompts/get":
		c.getPrompt(m, modern, out)
	case "resources/subscribe", "resources/unsubscribe":
		if modern { // 2026-07-28 subscribes through subscriptions/listen
			reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + m.Method})
			return
		}
		c.subscribe(m, out)
	case "tasks/get", "tasks/result", "tasks/list", "tasks/cancel", "tasks/update":
		c.serveTaskMethod(ctx, m, base, modern, out)
	case "subscriptions/listen":
		if !modern {
			reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: subscriptions/listen"})
			return
		}
		c.listen(ctx, m, out)
	case "completion/complete":
		c.complete(m, modern, out)
	case "logging/setLevel":
		if modern { // removed in 2026-07-28
			reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: logging/setLevel"})
			return
		}
		c.setLevel(m, out)
	default:
		reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + m.Method})
	}
}

var serverInfo = map[string]string{"name": "mcptest", "version": "1"}

// capabilities are what the server declares on 2026-07-28: list changes
// and resource updates travel on subscriptions/listen streams; no logging
// capability (logging/setLevel is gone; a request asks in its _meta).
var capabilities = map[string]any{
	"tools":       map[string]any{"listChanged": true},
	"resources":   map[string]any{"subscribe": true, "listChanged": true},
	"prompts":     map[string]any{"listChanged": true},
	"completions": map[string]any{},
}

// handshakeCapabilities are what the server declares to a handshake-era
// client.
var handshakeCapabilities = map[string]any{
	"tools":       map[string]any{"listChanged": true},
	"resources":   map[string]any{"subscribe": true, "listChanged": true},
	"prompts":     map[string]any{"listChanged": true},
	"completions": map[string]any{},
	"logging":     map[string]any{},
}

func reply(out outbox, id jsonrpc.ID, result any, e *jsonrpc.Error) error {
	m := &jsonrpc.Message{ID: id, Error: e}
	if e == nil {
		raw, err := json.Marshal(result)
		if err != nil {
			return err
		}
		m.Result = raw
	}
	return out.write(m)
}

func (c *serverConn) listTools(m *jsonrpc.Message, modern bool, out outbox) {
	listPage(c, m, "tools", c.s.toolList(), modern, out)
}

// listPage answers a listing with the page of items its cursor names:
// Options.PageSize items (all of them when zero), the cursor being the
// index of the page's first item.
func listPage[T any](c *serverConn, m *jsonrpc.Message, key string, items []T, modern bool, out outbox) {
	var p struct {
		Cursor string `json:"cursor"`
	}
	json.Unmarshal(m.Params, &p)
	start, _ := strconv.Atoi(p.Cursor)
	end := len(items)
	next := ""
	if size := c.s.opts.PageSize; size > 0 && start+size < len(items) {
		end = start + size
		next = strconv.Itoa(end)
	}
	if start > len(items) {
		start = len(items)
	}
	res := map[string]any{key: items[start:end]}
	if next != "" {
		res["nextCursor"] = next
	}
	if modern {
		res["resultType"] = "complete"
		res["ttlMs"] = c.s.opts.ListTTL.Milliseconds()
		res["cacheScope"] = cmp.Or(c.s.opts.ListCacheScope, "private")
	}
	reply(out, m.ID, res, nil)
}
