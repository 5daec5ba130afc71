package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
	"go.opentelemetry.io/otel/trace"
)

// Defaults for [ClientOptions].
const (
	DefaultRequestTimeout  = 60 * time.Second
	DefaultConnectTimeout  = 30 * time.Second
	DefaultDiscoverTimeout = 5 * time.Second
	DefaultMaxMessageSize  = 16 << 20
	DefaultMaxPages        = 100
)

// ClientOptions configure a [Client]. The zero value is ready to use; each
// field says what its zero value means.
type ClientOptions struct {
	// ClientInfo names the client to the server. Zero means
	// {Name: "andon", Version: the module version}.
	ClientInfo Implementation

	// ProtocolVersion pins the protocol revision, e.g. "2025-11-25". Empty
	// means negotiate: try 2026-07-28 (server/discover), and fall back to
	// the newest handshake-era revision the server accepts.
	ProtocolVersion string

	// RequestTimeout bounds every request made on a connected client that
	// has no Timeout of its own: the request's send, the wait for its
	// response and any rounds of input the server asks for (MRTR). It does
	// not bound connecting (see ConnectTimeout). When it fires, the request
	// is cancelled on the wire like any other. Zero means
	// DefaultRequestTimeout; negative means no default timeout.
	RequestTimeout time.Duration

	// ConnectTimeout bounds [Connect] as a whole: starting the subprocess
	// (or reaching the endpoint) and every leg of the handshake —
	// server/discover, initialize, notifications/initialized (over HTTP, its
	// POST). Connect's context bounds the same legs, and the shorter of the
	// two wins: a caller with a budget for a whole operation (connect and
	// call) gives Connect a context with that deadline. Zero means
	// DefaultConnectTimeout; negative means no bound but the context's.
	ConnectTimeout time.Duration

	// DiscoverTimeout bounds the server/discover probe. A server that does
	// not answer it in time is taken to be a handshake-era server. It never
	// extends the connect budget: the probe ends when that does. Zero means
	// DefaultDiscoverTimeout.
	DiscoverTimeout time.Duration

	// MaxMessageSize caps the size of one incoming message in bytes. A
	// larger message is skipped unread, and the request it answered fails
	// with a [ProtocolError] naming the limit; other requests and the
	// connection carry on. Zero means DefaultMaxMessageSize.
	MaxMessageSize int

	// CancelOutcomeWindow is how long, after a call is cancelled, the
	// client listens for what became of it ([CallOptions].OnCancelOutcome):
	// a late result, or the server's exit. Zero means
	// DefaultCancelOutcomeWindow.
	CancelOutcomeWindow time.Duration

	// MaxPages caps how many pages a listing such as [Client.ListTools]
	// follows. Zero means DefaultMaxPages.
	MaxPages int

	// MaxResourceSize caps the total size in bytes of the contents
	// [Client.ReadResource] returns (text, and blobs once decoded); past it
	// the read fails with [ErrResourceTooLarge]. Zero means no cap of its
	// own (MaxMessageSize still bounds the message).
	MaxResourceSize int

	// Logger receives the client's diagnostics and the server's stderr and
	// log messages. Nil means discard them.
	Logger *slog.Logger

	// Roots are offered to the server (roots/list); [Client.SetRoots]
	// changes them and tells the server. Nil means the client does not
	// declare the roots capability.
	Roots []Root

	// SamplingHandler answers sampling/createMessage; ElicitationHandler
	// answers elicitation/create. Nil means the capability is not declared
	// and such requests are refused with method-not-found.
	SamplingHandler    RequestHandler
	ElicitationHandler RequestHandler

	// OnCancelSent, if set, is told each time the signal that cancels an
	// interrupted call (cancelled or timed out) is out on the wire; see
	// [CancelSentFunc]. Nil costs nothing.
	OnCancelSent CancelSentFunc

	// OnResourceUpdated, if set, is told the URI of each
	// notifications/resources/updated: a resource subscribed to with
	// [Client.Subscribe] (on 2026-07-28, [Client.Listen]) changed.
	// OnListChanged, if set, is told "tools", "resources" or "prompts" for
	// each notifications/{list}/list_changed (on 2026-07-28 they come on a
	// Listen stream only).
	// Each call runs on a goroutine of its own (so it may call the client,
	// to re-read or re-list), in no guaranteed order; Close waits for calls
	// that are running.
	OnResourceUpdated func(uri string)
	OnListChanged     func(list string)

	// TracerProvider, if set, gives every request a span (a client span
	// named after the MCP semantic conventions, "tools/call NAME", with
	// mcp.method.name, gen_ai.tool.name, jsonrpc.request.id …) as a child
	// of the span in the request's context, records a cancelled request's
	// signal on it as events, and sends the span's W3C trace context to
	// the server: traceparent and tracestate in params._meta, and over
	// HTTP as headers too. Nil means no tracing, at no cost: no span, no
	// propagation. The client uses only the OpenTelemetry API; the
	// embedder brings the SDK and the exporter.
	TracerProvider trace.TracerProvider
}

// RequestHandler answers a request the server makes of the client: a
// JSON-RPC request on handshake-era revisions, an input request inside an
// input_required result on 2026-07-28. params are the request's params as the
// server sent them; the returned value is encoded as the result. Returning an
// *RPCError sends that error; any other error is sent as an internal error.
type RequestHandler func(ctx context.Context, params json.RawMessage) (any, error)

// Client is a connection to one MCP server. It is safe for concurrent use:
// many calls may be in flight at once, and cancelling one touches no other.
type Client struct {
	opts   ClientOptions
	logger *slog.Logger
	tracer trace.Tracer // nil when not tracing
	conn   conn
	info   ServerInfo      // set by the handshake, read-only afterwards
	rev    revision        // the negotiated revision; likewise
	caps   json.RawMessage // the client's capabilities
	// modernCaps are caps with the extensions the client implements
	// (2026-07-28 _meta).
	modernCaps json.RawMessage

	// serverName is the server's name for its log messages, which the
	// reader may deliver while the handshake is still writing info.
	serverName atomic.Pointer[string]

	nextID    atomic.Int64
	nextToken atomic.Int64
	// timeouts runs the requests' idle timeouts on one timer.
	timeouts *timeouts

	mu       sync.Mutex
	calls    map[int64]*call               // in flight, by request id
	progress map[string]*call              // by progress token, as JSON
	serving  map[string]context.CancelFunc // server requests being answered
	// roots replaces opts.Roots once SetRoots has been called.
	roots []Root
	// hints are the cache hints of the last complete listings, by list.
	hints map[string]CacheHint
	// logLevel is the level SetLoggingLevel set on 2026-07-28, which every
	// later request carries in its _meta.
	logLevel atomic.Pointer[LoggingLevel]
	// listen is the 2026-07-28 subscriptions/listen stream, if open.
	listen listenState
	// params holds each listed tool's x-mcp-header annotations
	// (2026-07-28), by tool name.
	params   map[string][]paramHeader
	tasks    *taskState // tasks being followed, tools' task support
	closed   chan struct{}
	closeErr error // why the client is closed; set before closed is closed

	// bg counts the goroutines the client starts (cancellation
	// notifications, answers to server requests); bgCtx ends them once the
	// client is closed.
	bg             sync.WaitGroup
	bgCtx          context.Context
	stopBackground context.CancelFunc
}

var errClientClosed = errors.New("client closed")

// Connect opens a connection over t, negotiates the protocol revision, and
// returns a ready client. ctx and [ClientOptions].ConnectTimeout bound the
// connection and every leg of its handshake, whichever ends first: when
// either ends, the attempt is abandoned (the handshake is never cancelled by
// notification; its connection is closed, a subprocess stopped) and Connect
// returns a [*ConnectError] naming the leg, matching [ErrCancelled] or
// [ErrTimeout]. The teardown of a failed attempt has bounds of its own
// ([CommandTransport].TerminateGrace, [HTTPTransport].CloseTimeout), cut
// to a moment once ctx has ended (see [Client.Shutdown]). ctx has no
// effect once Connect has returned. A nil opts is the zero
// ClientOptions.
func Connect(ctx context.Context, t Transport, opts *ClientOptions) (*Client, error) {
	c := newClient(opts)
	if c.opts.ConnectTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, c.opts.ConnectTimeout, errConnectTimeout)
		defer cancel()
	}
	// A context that has already ended still goes to the transport, which
	// then releases what it holds (a Stream closes its stream) and fails.
	pinned, _ := lookupRevision(c.opts.ProtocolVersion) // an unknown one fails the handshake
	conn, err := t.connect(ctx, connConfig{pinned: pinned, serverRequests: c.opts.Roots != nil || c.opts.SamplingHandler != nil || c.opts.ElicitationHandler != nil || c.opts.OnListChanged != nil || c.opts.OnResourceUpdated != nil, maxMessageSize: c.opts.MaxMessageSize, logger: c.logger, receiver: c, traced: c.tracer != nil})
	if err != nil {
		if ctx.Err() != nil {
			err = interruption(LegConnect, ctx)
		}
		return nil, &ConnectError{Leg: LegConnect, Err: err}
	}
	c.conn = conn
	conn.start()
	if err := c.handshake(ctx); err != nil {
		// A server that did not answer in time had its chance: its
		// subprocess is not given a grace period on top of the budget.
		if a, ok := conn.(aborter); ok && (errors.Is(err, ErrTimeout) || errors.Is(err, ErrCancelled)) {
			a.abort()
		}
		c.Shutdown(ctx) // an ended budget is not followed by grace periods either
		return nil, err
	}
	return c, nil
}

func newClient(opts *ClientOptions) *Client {
	c := &Client{
		calls:    make(map[int64]*call),
		progress: make(map[string]*call),
		serving:  make(map[string]context.CancelFunc),
		params:   make(map[string][]paramHeader),
		tasks:    newTaskState(),
		closed:   make(chan struct{}),
		timeouts: newTimeouts(),
	}
	c.bgCtx, c.stopBackground = context.WithCancel(context.Background())
	if opts != nil {
		c.opts = *opts
		if opts.Roots != nil { // an empty list still declares roots
			c.opts.Roots = append([]Root{}, opts.Roots...)
		}
	}
	o := &c.opts
	if o.ClientInfo.Name == "" {
		o.ClientInfo = Implementation{Name: "andon", Version: moduleVersion()}
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.DiscoverTimeout <= 0 {
		o.DiscoverTimeout = DefaultDiscoverTimeout
	}
	if o.MaxMessageSize <= 0 {
		o.MaxMessageSize = DefaultMaxMessageSize
	}
	if o.CancelOutcomeWindow <= 0 {
		o.CancelOutcomeWindow = DefaultCancelOutcomeWindow
	}
	if o.MaxPages <= 0 {
		o.MaxPages = DefaultMaxPages
	}
	c.caps = c.capabilities()
	c.modernCaps = c.modernCapabilities()
	if o.TracerProvider != nil {
		c.tracer = o.TracerProvider.Tracer(tracerName, trace.WithInstrumentationVersion(moduleVersion()))
	}
	c.logger = o.Logger
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Server returns what the client learned about the server when it connected.
func (c *Client) Server() ServerInfo { return c.info }

// ProtocolVersion returns the negotiated protocol revision.
func (c *Client) ProtocolVersion() string { return c.info.ProtocolVersion }

// Done returns a channel that is closed when the client is closed or its
// connection is lost; then [Client.Err] says why. A caller that keeps a
// client for a long time (one per server) uses it to reconnect before a
// call, rather than after a call failed.
func (c *Client) Done() <-chan struct{} { return c.closed }

// Err returns nil while the client is usable, and otherwise why it is not:
// an error matching [ErrClosed] (for a lost connection, with the reason,
// such as the server's exit status).
func (c *Client) Err() error { return c.err() }

// Close cancels every call in flight (they return an error matching
// [ErrClosed], and the server is told as its transport requires), then closes
// the connection. It is bounded: a subprocess that does not exit is
// signalled, then killed (see [CommandTransport]), an HTTP session's DELETE
// has [HTTPTransport].CloseTimeout. Calling Close or Shutdown again returns
// the result of the first call. Close is Shutdown with a context that never
// ends.
func (c *Client) Close() error { return c.Shutdown(context.Background()) }

// Shutdown is Close within a budget, in the style of http.Server's: while
// ctx lasts, the server is let leave by itself (a subprocess gets its
// TerminateGrace after stdin closes, and again after SIGTERM; a session
// its DELETE); once ctx has ended — or if it already has — each step left
// comes at once with a small bound of its own (100 ms): a subprocess that
// ignores stdin EOF and SIGTERM is killed, not waited for. The other legs
// of closing (flushing the cancellations of calls in flight, a task's
// tasks/cancel) have small bounds of their own either way. A command with
// one budget for everything it does closes its client with that budget's
// context. The error is Close's: an ended ctx only hurries the teardown.
func (c *Client) Shutdown(ctx context.Context) error {
	// A task's cancellation is a request (tasks/cancel), which needs the
	// client open: those on their way go out first, within a bound.
	c.tasks.cancels.wait(flushGrace)
	c.mu.Lock()
	first := c.closeErr == nil
	var inFlight []*call
	if first {
		c.closeErr = closedError(errClientClosed)
		close(c.closed)
		for id, cl := range c.calls {
			if cl.sent.Load() {
				inFlight = append(inFlight, cl)
			}
			delete(c.calls, id)
		}
		for _, cancel := range c.serving {
			cancel()
		}
	}
	c.mu.Unlock()
	if first && c.conn != nil {
		// Cancellations already on their way (a call interrupted just
		// before Close) go out before the connection closes, within a
		// bound; a caller that cancels and then closes must not lose them.
		waitBounded(&c.bg, flushGrace)
		ctx, cancel := context.WithTimeout(c.bgCtx, flushGrace)
		for _, cl := range inFlight {
			c.conn.abandon(jsonrpc.Int(cl.id), fmt.Errorf("%w: %w", context.Canceled, errClientClosed))
			if !cl.handshake && !cl.quiet && c.conn.notifiesCancel(c.rev) {
				c.sendCancelled(ctx, cl.id, "client closed")
			}
		}
		cancel()
	}
	var err error
	if c.conn != nil {
		err = c.conn.close(ctx)
	}
	c.stopBackground()
	c.bg.Wait()
	c.timeouts.idle()
	return err
}

// waitBounded waits for wg, or for d, whichever comes first.
func waitBounded(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// receive handles a message from the server. It runs on the connection's
// reader, so it never blocks on the network.
func (c *Client) receive(m *jsonrpc.Message) {
	c.receiveWithin(context.Background(), m)
}

// receiveWithin is receive for a message read from one request's response
// stream (HTTP): a server request there is about that request (sessions
// HTTP sends it on the stream of the call that asked), so its handler ends
// when the request is abandoned, even if the server's notifications/cancelled
// for it, written on the stream the client closed, never arrives.
func (c *Client) receiveWithin(ctx context.Context, m *jsonrpc.Message) {
	switch {
	case m.IsResponse():
		c.receiveResponse(m)
	case m.IsRequest():
		c.serveRequest(ctx, m)
	default:
		c.receiveNotification(m)
	}
}

func (c *Client) receiveResponse(m *jsonrpc.Message) {
	if !m.ID.IsValid() {
		// Allowed only when the server could not read a request's id.
		c.logger.Warn("mcp: server sent an error without an id", "code", m.Error.Code, "message", m.Error.Message)
		return
	}
	cl := c.takeCall(m.ID)
	if cl == nil {
		if late := c.takeLate(m.ID); late != nil && m.Error == nil {
			late(m.Result)
			return
		}
		c.logger.Debug("mcp: dropping response to a request no longer in flight", "id", m.ID.String())
		return
	}
	cl.reply <- reply{msg: m}
}

func (c *Client) fail(id jsonrpc.ID, err error) {
	if cl := c.takeCall(id); cl != nil {
		cl.reply <- reply{err: err}
		return
	}
	c.logger.Debug("mcp: dropping a failure of a request no longer in flight", "id", id.String(), "error", err)
}

func (c *Client) receiveInvalid(de *jsonrpc.DecodeError) {
	if cl := c.takeCall(de.ID); cl != nil {
		cl.reply <- reply{err: &ProtocolError{Reason: de.Error()}}
		return
	}
	c.logger.Warn("mcp: ignoring a malformed message from the server", "reason", de.Error())
}

// takeCall removes and returns the call waiting for id, if any. Only the
// taker may deliver to the call, so a reply is delivered at most once.
func (c *Client) takeCall(id jsonrpc.ID) *call {
	n, ok := id.Int64()
	if !ok {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.calls[n]
	delete(c.calls, n)
	return cl
}

func (c *Client) receiveNotification(m *jsonrpc.Message) {
	if c.receiveListenNotification(m.Method, m.Params) {
		return
	}
	switch m.Method {
	case "notifications/progress":
		var p struct {
			Token json.RawMessage `json:"progressToken"`
			Progress
		}
		if err := json.Unmarshal(m.Params, &p); err != nil {
			c.logger.Warn("mcp: ignoring malformed progress notification", "error", err)
			return
		}
		c.mu.Lock()
		cl := c.progress[string(p.Token)]
		c.mu.Unlock()
		if cl == nil {
			c.logger.Debug("mcp: dropping progress for a request no longer in flight", "token", string(p.Token))
			return
		}
		cl.pushProgress(p.Progress)
	case "notifications/cancelled":
		var p struct {
			RequestID jsonrpc.ID `json:"requestId"`
			Reason    string     `json:"reason"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return // invalid cancellations are ignored, as the spec asks
		}
		c.mu.Lock()
		cancel := c.serving[p.RequestID.String()]
		c.mu.Unlock()
		if cancel != nil {
			cancel()
		}
	case "notifications/message":
		var p struct {
			Level  string          `json:"level"`
			Logger string          `json:"logger"`
			Data   json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(m.Params, &p); err == nil {
			server := ""
			if name := c.serverName.Load(); name != nil {
				server = *name
			}
			c.logger.Log(context.Background(), logLevel(p.Level), "mcp: server log", "server", server, "level", p.Level, "logger", p.Logger, "data", string(p.Data))
		}
	case "notifications/resources/updated":
		var p struct {
			URI string `json:"uri"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil || p.URI == "" {
			c.logger.Warn("mcp: ignoring malformed resource update", "params", string(m.Params))
			return
		}
		if f := c.opts.OnResourceUpdated; f != nil {
			c.goBackground(func() { f(p.URI) })
		}
	case "notifications/tasks/status", "notifications/tasks":
		c.receiveTaskStatus(m.Params)
	case "notifications/tools/list_changed", "notifications/resources/list_changed", "notifications/prompts/list_changed":
		list := strings.TrimSuffix(strings.TrimPrefix(m.Method, "notifications/"), "/list_changed")
		c.staleListing(list) // before the callback, which may list again
		if f := c.opts.OnListChanged; f != nil {
			c.goBackground(func() { f(list) })
		}
	default:
		c.logger.Debug("mcp: ignoring notification", "method", m.Method)
	}
}

// logLevel maps an MCP (syslog) log level to slog.
func logLevel(l string) slog.Level {
	switch l {
	case "debug":
		return slog.LevelDebug
	case "info", "notice":
		return slog.LevelInfo
	case "warning":
		return slog.LevelWarn
	default:
		return slog.LevelError
	}
}

// lost records that the connection is gone. Calls in flight return an error
// matching ErrClosed that says why.
func (c *Client) lost(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closeErr != nil {
		return
	}
	c.closeErr = closedError(err)
	close(c.closed)
	for _, cancel := range c.serving {
		cancel()
	}
	c.logger.Warn("mcp: connection lost", "error", err)
}

// goBackground runs f on a goroutine that Close waits for, unless the client
// is already closed.
func (c *Client) goBackground(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closeErr != nil {
		return false
	}
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		f()
	}()
	return true
}
