package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
)

// A ToolServer is what a [Server] serves: the tools a client may list and
// call. Its methods are called concurrently, one goroutine per request.
//
// CallTool's context ends when the client stops waiting, with a cause that
// says how ([ErrClientCancelled], [ErrClientGone], [ErrServerClosed]):
// the MCP client's cancel, in whatever form its revision and transport
// define it, arrives as that context's end, always. The context carries
// the values of the one the request came in under — the HTTP request's,
// or ServeStream's — so that an identity the caller's middleware
// authenticated reaches the handler — and the W3C trace context the
// client sent (in _meta, or over HTTP in the traceparent header) as its
// remote parent, so that the handler's spans continue the client's trace.
// A tool that fails
// returns a result with IsError set; an error means the request itself
// could not be served, and an [*RPCError] among its chain gives the code
// the client sees (an unknown tool is CodeInvalidParams, say).
type ToolServer interface {
	ListTools(ctx context.Context, peer *Peer) ([]Tool, error)
	CallTool(ctx context.Context, call *ToolCall) (*CallToolResult, error)
}

// A ResourceServer is a [ToolServer] that serves resources too: a
// [Server] whose ToolServer is one declares the resources capability and
// answers resources/list and resources/read.
type ResourceServer interface {
	ListResources(ctx context.Context, peer *Peer) ([]Resource, error)
	ReadResource(ctx context.Context, peer *Peer, uri string) (*ReadResourceResult, error)
}

// A PromptServer is a [ToolServer] that serves prompts too: a [Server]
// whose ToolServer is one declares the prompts capability and answers
// prompts/list and prompts/get.
type PromptServer interface {
	ListPrompts(ctx context.Context, peer *Peer) ([]Prompt, error)
	GetPrompt(ctx context.Context, peer *Peer, name string, args map[string]string) (*GetPromptResult, error)
}

// A Completer is a [ToolServer] that completes arguments too: a [Server]
// whose ToolServer is one declares the completions capability and answers
// completion/complete.
type Completer interface {
	Complete(ctx context.Context, peer *Peer, req CompleteRequest) (*Completion, error)
}

// Peer is the client a request came from, as the server knows it.
type Peer struct {
	// Session names the client's session: its Streamable HTTP session
	// (Mcp-Session-Id), its stdio connection, or for a stateless
	// 2026-07-28 request over HTTP a name of that request alone.
	Session string
	// Client is the client's self-description (initialize's clientInfo,
	// or a 2026-07-28 request's _meta).
	Client Implementation
	// ProtocolVersion is the revision the request was made in.
	ProtocolVersion string
	// Transport is "stdio" (any byte stream) or "http".
	Transport string
}

// ToolCall is one tools/call request.
type ToolCall struct {
	// Name is the tool's name, as the client sent it.
	Name string
	// Arguments are the call's arguments, a JSON object or empty.
	Arguments json.RawMessage
	// Peer is who asked.
	Peer *Peer
}

// Why a [ToolServer]'s context ended: [context.Cause] of a request's context
// matches one of these.
var (
	// ErrClientCancelled: the client cancelled the request with
	// notifications/cancelled (stdio, handshake-era HTTP sessions).
	ErrClientCancelled = errors.New("mcp: the client cancelled the request")
	// ErrClientGone: the client went away before the response: its
	// connection or response stream closed (the whole cancel of a
	// 2026-07-28 request over HTTP), or its session was deleted.
	ErrClientGone = errors.New("mcp: the client went away")
	// ErrServerClosed: the server was closed with the request in flight.
	ErrServerClosed = errors.New("mcp: the server closed")
)

// ServerOptions configure a [Server]. The zero value serves every revision
// andon speaks, as "andon".
type ServerOptions struct {
	// Implementation names the server to its clients. Zero means
	// {Name: "andon", Version: the module version}.
	Implementation Implementation
	// Instructions are hints for the client's model, sent when it connects.
	Instructions string
	// Versions are the revisions served, as [SupportedVersions] names
	// them. Nil means every one. Without 2026-07-28, server/discover is
	// answered with method-not-found, as a handshake-era server does.
	Versions []string
	// PageSize splits tools/list into pages of this many tools. Zero means
	// one page.
	PageSize int
	// MaxMessageSize caps one incoming message. Zero means
	// DefaultMaxMessageSize.
	MaxMessageSize int
	// Logger receives what the server does not answer to a client. Nil
	// means slog.Default().
	Logger *slog.Logger
	// OnSessionEnd, if set, is told the [Peer].Session of each session
	// that ended (its connection closed, its DELETE, Close; a stateless
	// request's when it is answered), so that what is kept per session
	// can go. It must not block.
	OnSessionEnd func(session string)
}

// Server is an MCP server: it answers MCP clients on behalf of a
// [ToolServer], over stdio ([Server.ServeStream]) and Streamable HTTP
// ([Server.ServeHTTP]: the sessions of 2025-03-26 to 2025-11-25 and the
// stateless requests of 2026-07-28 on one endpoint). Every cancel a client
// can send is honoured as its revision defines it — notifications/cancelled,
// a closed response stream, a deleted session, a closed connection — by
// ending the context of the request it names.
type Server struct {
	tools  ToolServer
	opts   ServerOptions
	logger *slog.Logger

	mu       sync.Mutex
	closed   bool
	sessions map[*serverSession]bool
	httpByID map[string]*serverSession // Streamable HTTP sessions
	wg       sync.WaitGroup            // every request being served
}

// NewServer returns a server of tools. A nil opts is the zero ServerOptions.
func NewServer(tools ToolServer, opts *ServerOptions) *Server {
	s := &Server{tools: tools, sessions: map[*serverSession]bool{}, httpByID: map[string]*serverSession{}}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Implementation == (Implementation{}) {
		s.opts.Implementation = Implementation{Name: "andon", Version: moduleVersion()}
	}
	if s.opts.Versions == nil {
		s.opts.Versions = SupportedVersions()
	}
	if s.opts.MaxMessageSize <= 0 {
		s.opts.MaxMessageSize = DefaultMaxMessageSize
	}
	s.logger = s.opts.Logger
	if s.logger == nil {
		s.logger = slog.Default()
	}
	return s
}

// serves reports whether s serves revision v.
func (s *Server) serves(v string) bool { return slices.Contains(s.opts.Versions, v) }

// handshakeVersion is the revision an initialize asking for want gets: want
// if s serves it, else the newest handshake-era revision s serves; "" if none.
func (s *Server) handshakeVersion(want string) string {
	if r, ok := lookupRevision(want); ok && handshakeEra(r) && s.serves(want) {
		return want
	}
	for _, v := range s.opts.Versions {
		if r, ok := lookupRevision(v); ok && handshakeEra(r) {
			return v
		}
	}
	return ""
}

// NotifyToolsChanged tells every client that can hear it that the list of
// tools changed (notifications/tools/list_changed): on stdio connections,
// on the standalone streams of HTTP sessions, and on 2026-07-28
// subscriptions/listen streams that asked for it.
func (s *Server) NotifyToolsChanged() {
	s.mu.Lock()
	sessions := make([]*serverSession, 0, len(s.sessions))
	for ss := range s.sessions {
		sessions = append(sessions, ss)
	}
	s.mu.Unlock()
	for _, ss := range sessions {
		ss.notifyListChanged("tools")
	}
}

// Close ends every session and connection, cancelling the requests in
// flight with [ErrServerClosed], and waits for their handlers to return.
// Requests that arrive after are refused.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	sessions := make([]*serverSession, 0, len(s.sessions))
	for ss := range s.sessions {
		sessions = append(sessions, ss)
	}
	s.mu.Unlock()
	for _, ss := range sessions {
		ss.end(ErrServerClosed)
	}
	s.wg.Wait()
	for _, ss := range sessions {
		s.untrack(ss) // those no ServeStream untracks: HTTP sessions
	}
	return nil
}

// track adds a session; false if the server is closed.
func (s *Server) track(ss *serverSession) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.sessions[ss] = true
	return true
}

// untrack drops a session that has ended.
func (s *Server) untrack(ss *serverSession) {
	s.mu.Lock()
	_, tracked := s.sessions[ss]
	delete(s.sessions, ss)
	if s.httpByID[ss.id] == ss {
		delete(s.httpByID, ss.id)
	}
	s.mu.Unlock()
	if tracked && s.opts.OnSessionEnd != nil {
		s.opts.OnSessionEnd(ss.id)
	}
}
