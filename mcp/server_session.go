package mcp

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
)

// serverSession is one client of a [Server]: a stdio connection, a
// Streamable HTTP session, or one stateless 2026-07-28 request. Its
// requests' contexts end when it does.
type serverSession struct {
	s         *Server
	id        string
	transport string
	ctx       context.Context
	end       context.CancelCauseFunc
	handlers  sync.WaitGroup // its requests being served

	mu        sync.Mutex
	client    Implementation // initialize's clientInfo
	version   string         // the handshake's revision; "" before it
	inflight  map[string]context.CancelCauseFunc
	notify    func(*jsonrpc.Message) error // its channel for notifications; nil if it has none
	listeners map[*serverListener]bool
}

// serverOut is where the messages about one request go before its
// response: the connection on stdio, the request's event stream over HTTP.
// Nil where a request can carry none (a JSON response).
type serverOut func(*jsonrpc.Message) error

func newServerSession(s *Server, parent context.Context, transport string) *serverSession {
	ctx, end := context.WithCancelCause(context.WithoutCancel(parent))
	return &serverSession{s: s, id: newSessionID(), transport: transport, ctx: ctx, end: end, inflight: map[string]context.CancelCauseFunc{}}
}

func newSessionID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// idKey is a request id as a map key.
func idKey(id jsonrpc.ID) string {
	b, _ := id.MarshalJSON()
	return string(b)
}

// begin registers request m, so that a cancel naming it reaches it, and
// returns its context and the function that unregisters it. The context
// carries the values of values (an HTTP request's: who authenticated it)
// and ends with the session. begin is called before the request is handed
// to a goroutine, so that a cancel read next from the same stream finds it.
func (ss *serverSession) begin(values context.Context, m *jsonrpc.Message) (context.Context, context.CancelCauseFunc, func()) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(values))
	stop := context.AfterFunc(ss.ctx, func() { cancel(context.Cause(ss.ctx)) })
	key := idKey(m.ID)
	ss.mu.Lock()
	ss.inflight[key] = cancel
	ss.mu.Unlock()
	ss.handlers.Add(1)
	ss.s.wg.Add(1)
	return ctx, cancel, func() {
		ss.mu.Lock()
		delete(ss.inflight, key)
		ss.mu.Unlock()
		stop()
		cancel(nil)
		ss.handlers.Done()
		ss.s.wg.Done()
	}
}

// receive takes a notification or a response from the client.
func (ss *serverSession) receive(m *jsonrpc.Message) {
	if m.Method != "notifications/cancelled" {
		return // initialized, roots changes, responses: nothing asked for them
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
		Reason    string          `json:"reason"`
	}
	if json.Unmarshal(m.Params, &p) != nil {
		return
	}
	var id jsonrpc.ID
	if id.UnmarshalJSON(p.RequestID) != nil {
		return
	}
	ss.mu.Lock()
	cancel := ss.inflight[idKey(id)]
	ss.mu.Unlock()
	if cancel == nil {
		return // answered already, or never asked: the spec says ignore it
	}
	cause := ErrClientCancelled
	if p.Reason != "" {
		cause = fmt.Errorf("%w: %s", ErrClientCancelled, truncateReason(p.Reason))
	}
	cancel(cause)
}

// truncateReason keeps a client's cancel reason to a size fit for a log.
func truncateReason(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}

// incomingParams are the params of every request a [Server] serves, as far
// as it reads them.
type incomingParams struct {
	Meta struct {
		ProtocolVersion    string          `json:"io.modelcontextprotocol/protocolVersion"`
		ClientCapabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
		ClientInfo         *Implementation `json:"io.modelcontextprotocol/clientInfo"`
	} `json:"_meta"`
	Cursor          string          `json:"cursor"`
	URI             string          `json:"uri"` // resources/read
	Name            string          `json:"name"`
	Arguments       json.RawMessage `json:"arguments"`
	ProtocolVersion string          `json:"protocolVersion"` // initialize
	ClientInfo      Implementation  `json:"clientInfo"`      // initialize
	Notifications   json.RawMessage `json:"notifications"`   // subscriptions/listen
}

// decodeParams reads a request's params; a 2026-07-28 request (one with a
// protocol version in _meta) must name a revision served and carry the
// client's capabilities.
func (ss *serverSession) decodeParams(m *jsonrpc.Message) (*incomingParams, *jsonrpc.Error) {
	p := new(incomingParams)
	if len(m.Params) > 0 {
		if err := json.Unmarshal(m.Params, p); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "params: " + err.Error()}
		}
	}
	if v := p.Meta.ProtocolVersion; v != "" {
		if r, ok := lookupRevision(v); !ok || handshakeEra(r) || !ss.s.serves(v) {
			data, _ := json.Marshal(map[string]any{"supported": ss.s.modernVersions(), "requested": v})
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeUnsupportedProtocolVersion, Message: "unsupported protocol version " + strconv.Quote(v), Data: data}
		}
		if p.Meta.ClientCapabilities == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing _meta io.modelcontextprotocol/clientCapabilities"}
		}
	}
	return p, nil
}

// peer is who asked a request with params p.
func (ss *serverSession) peer(p *incomingParams) *Peer {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	peer := &Peer{Session: ss.id, Client: ss.client, ProtocolVersion: ss.version, Transport: ss.transport}
	if p.Meta.ProtocolVersion != "" {
		peer.ProtocolVersion = p.Meta.ProtocolVersion
		if p.Meta.ClientInfo != nil {
			peer.Client = *p.Meta.ClientInfo
		}
	}
	return peer
}

// serve answers request m, whose context is ctx, and returns its response;
// nil when there is none to send (the client cancelled it). out, if not
// nil, carries the messages a request sends before its response.
func (ss *serverSession) serve(ctx context.Context, m *jsonrpc.Message, out serverOut) *jsonrpc.Message {
	result, rerr := ss.dispatch(ctx, m, out)
	if errors.Is(context.Cause(ctx), ErrClientCancelled) {
		return nil // "receivers SHOULD NOT send a response for cancelled requests"
	}
	resp := &jsonrpc.Message{ID: m.ID, Error: rerr}
	if rerr == nil {
		raw, err := json.Marshal(result)
		if err != nil {
			resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encoding the result: " + err.Error()}
		} else {
			resp.Result = raw
		}
	}
	return resp
}

func (ss *serverSession) dispatch(ctx context.Context, m *jsonrpc.Message, out serverOut) (any, *jsonrpc.Error) {
	p, rerr := ss.decodeParams(m)
	if rerr != nil {
		return nil, rerr
	}
	modern := p.Meta.ProtocolVersion != ""
	s := ss.s
	switch m.Method {
	case "server/discover":
		if !s.serves(Version20260728) {
			return nil, methodNotFound(m.Method)
		}
		return map[string]any{
			"supportedVersions": s.modernVersions(),
			"capabilities":      s.capabilities(),
			"instructions":      s.opts.Instructions,
			"ttlMs":             0,
			"cacheScope":        "private",
			"resultType":        "complete",
			"_meta":             map[string]any{"io.modelcontextprotocol/serverInfo": s.opts.Implementation},
		}, nil
	case "initialize":
		if modern {
			return nil, methodNotFound(m.Method)
		}
		v := s.handshakeVersion(p.ProtocolVersion)
		if v == "" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no handshake-era revision is served: use server/discover"}
		}
		ss.mu.Lock()
		ss.version, ss.client = v, p.ClientInfo
		ss.mu.Unlock()
		res := map[string]any{"protocolVersion": v, "capabilities": s.capabilities(), "serverInfo": s.opts.Implementation}
		if s.opts.Instructions != "" {
			res["instructions"] = s.opts.Instructions
		}
		return res, nil
	case "ping":
		if modern {
			return nil, methodNotFound(m.Method) // gone with the handshake
		}
		return struct{}{}, nil
	case "tools/list":
		return ss.listTools(ctx, p, modern)
	case "tools/call":
		return ss.callTool(ctx, p, modern)
	case "resources/list", "resources/read":
		rs, ok := s.tools.(ResourceServer)
		if !ok {
			return nil, methodNotFound(m.Method)
		}
		if m.Method == "resources/list" {
			list, err := rs.ListResources(ctx, ss.peer(p))
			if err != nil {
				return nil, rpcError(err)
			}
			return pageOf("resources", list, p.Cursor, ss.s.opts.PageSize, modern)
		}
		if p.URI == "" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "resources/read needs a uri"}
		}
		res, err := rs.ReadResource(ctx, ss.peer(p), p.URI)
		if err != nil {
			return nil, rpcError(err)
		}
		out, rerr := withResultType(res, modern)
		if m, ok := out.(map[string]json.RawMessage); ok {
			// 2026-07-28 requires a read's caching hints: not reusable,
			// since what a read returns may change at any time.
			m["ttlMs"], m["cacheScope"] = json.RawMessage(`0`), json.RawMessage(`"private"`)
		}
		return out, rerr
	case "prompts/list", "prompts/get":
		ps, ok := s.tools.(PromptServer)
		if !ok {
			return nil, methodNotFound(m.Method)
		}
		if m.Method == "prompts/list" {
			list, err := ps.ListPrompts(ctx, ss.peer(p))
			if err != nil {
				return nil, rpcError(err)
			}
			return pageOf("prompts", list, p.Cursor, ss.s.opts.PageSize, modern)
		}
		if p.Name == "" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "prompts/get needs a name"}
		}
		var args map[string]string
		if len(p.Arguments) > 0 && string(p.Arguments) != "null" {
			if err := json.Unmarshal(p.Arguments, &args); err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "prompt arguments are strings: " + err.Error()}
			}
		}
		res, err := ps.GetPrompt(ctx, ss.peer(p), p.Name, args)
		if err != nil {
			return nil, rpcError(err)
		}
		return withResultType(res, modern)
	case "completion/complete":
		cp, ok := s.tools.(Completer)
		if !ok {
			return nil, methodNotFound(m.Method)
		}
		var q struct {
			Ref      CompletionRef `json:"ref"`
			Argument struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"argument"`
			Context struct {
				Arguments map[string]string `json:"arguments"`
			} `json:"context"`
		}
		if err := json.Unmarshal(m.Params, &q); err != nil || q.Ref.Type == "" || q.Argument.Name == "" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete needs a ref and an argument"}
		}
		c, err := cp.Complete(ctx, ss.peer(p), CompleteRequest{Ref: q.Ref, Argument: q.Argument.Name, Value: q.Argument.Value, Context: q.Context.Arguments})
		if err != nil {
			return nil, rpcError(err)
		}
		if c.Values == nil {
			c.Values = []string{}
		}
		return withResultType(map[string]any{"completion": c}, modern)
	case "subscriptions/listen":
		if !modern {
			return nil, methodNotFound(m.Method)
		}
		return ss.listen(ctx, m, p, out)
	default:
		return nil, methodNotFound(m.Method)
	}
}

func methodNotFound(method string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + method}
}

// modernVersions are the revisions server/discover lists: those served
// that a 2026-07-28 client may choose.
func (s *Server) modernVersions() []string {
	var vs []string
	for _, v := range s.opts.Versions {
		if r, ok := lookupRevision(v); ok && !handshakeEra(r) {
			vs = append(vs, v)
		}
	}
	return vs
}

// capabilities are what s declares: tools, whose list may change (on
// 2026-07-28 list changes travel on subscriptions/listen), and resources
// and prompts if its ToolServer serves them.
func (s *Server) capabilities() map[string]any {
	caps := map[string]any{"tools": map[string]any{"listChanged": true}}
	if _, ok := s.tools.(ResourceServer); ok {
		caps["resources"] = map[string]any{}
	}
	if _, ok := s.tools.(PromptServer); ok {
		caps["prompts"] = map[string]any{}
	}
	if _, ok := s.tools.(Completer); ok {
		caps["completions"] = map[string]any{}
	}
	return caps
}

// rpcError is the error response for err, a ToolServer's error.
func rpcError(err error) *jsonrpc.Error {
	var re *RPCError
	if errors.As(err, &re) {
		return &jsonrpc.Error{Code: re.Code, Message: re.Message, Data: re.Data}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

func (ss *serverSession) listTools(ctx context.Context, p *incomingParams, modern bool) (any, *jsonrpc.Error) {
	tools, err := ss.s.tools.ListTools(ctx, ss.peer(p))
	if err != nil {
		return nil, rpcError(err)
	}
	return pageOf("tools", tools, p.Cursor, ss.s.opts.PageSize, modern)
}

// withResultType is res as its revision sends it: on 2026-07-28 with its
// resultType.
func withResultType(res any, modern bool) (any, *jsonrpc.Error) {
	if !modern {
		return res, nil
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encoding the result: " + err.Error()}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encoding the result: " + err.Error()}
	}
	m["resultType"] = json.RawMessage(`"complete"`)
	return m, nil
}

// pageOf is the page of items that cursor names, as a listing's result
// under key: size items at most (all when zero), the cursor being the
// index of the page's first item.
func pageOf[T any](key string, items []T, cursor string, size int, modern bool) (any, *jsonrpc.Error) {
	start := 0
	if cursor != "" {
		n, err := strconv.Atoi(cursor)
		if err != nil || n < 0 || n > len(items) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor " + strconv.Quote(cursor)}
		}
		start = n
	}
	end, next := len(items), ""
	if size > 0 && start+size < len(items) {
		end = start + size
		next = strconv.Itoa(end)
	}
	page := items[start:end]
	if page == nil {
		page = []T{}
	}
	res := map[string]any{key: page}
	if next != "" {
		res["nextCursor"] = next
	}
	if modern {
		res["resultType"] = "complete"
		res["ttlMs"] = 0
		res["cacheScope"] = "private"
	}
	return res, nil
}

// modernResult is a tool result as 2026-07-28 sends it: it says its type.
type modernResult struct {
	*CallToolResult
	ResultType string `json:"resultType"`
}

func (ss *serverSession) callTool(ctx context.Context, p *incomingParams, modern bool) (any, *jsonrpc.Error) {
	if p.Name == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call needs a tool name"}
	}
	res, err := ss.s.tools.CallTool(ctx, &ToolCall{Name: p.Name, Arguments: p.Arguments, Peer: ss.peer(p)})
	if err != nil {
		return nil, rpcError(err)
	}
	if res == nil {
		res = &CallToolResult{}
	}
	if res.Content == nil {
		res.Content = []Content{}
	}
	if modern {
		return modernResult{res, "complete"}, nil
	}
	return res, nil
}
