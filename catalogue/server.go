package catalogue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/egress"
	"github.com/andonhq/andon/mcp"
)

// server is one configured server: its long-lived client and its imported
// tools. A server disabled in the configuration never connects.
type server struct {
	cat    *Catalogue
	cfg    Server
	logger *slog.Logger

	// sem is held while connecting, and only then. It is a channel, not a
	// mutex, so that a call waiting for another call's reconnection can
	// give up when its own context ends.
	sem chan struct{}

	mu      sync.Mutex
	conn    *conn   // nil until connected, and after the connection is dropped
	tools   []*Tool // nil until imported
	lastErr error   // of the last import, nil if it succeeded
	// failures counts the imports that failed in a row; failedAt is when
	// the last of them ended and retryAt when the next may begin. Zero
	// once an import succeeds.
	failures          int
	failedAt, retryAt time.Time
	flight            *flight // the import under way, if any

	calls inflight // tool calls in flight, for the questions the server asks

	// refreshing is set while a re-import for a change of the server's
	// tools runs, refreshAgain when another change came meanwhile; change
	// is the last change one found (see listchanged.go).
	refreshing, refreshAgain bool
	change                   *ToolsChange

	logs logQueue // its log messages, on their way to runs' timelines
}

// flight is one import of a server's tools under way, which every listing
// that needs it waits for rather than starting its own.
type flight struct {
	done    chan struct{} // closed when the import has ended, its outcome recorded
	started time.Time
}

// conn is one connection to the server.
type conn struct {
	client *mcp.Client
	// gone is set once a call on the connection failed with mcp.ErrClosed;
	// the client's own Err says when it learned so first.
	gone atomic.Bool
}

// legError says which leg of an operation failed: "tools/call",
// "tools/list", a leg of the handshake ("server/discover", "initialize",
// "notifications/initialized"), "connecting" when the handshake did not
// say, or "waiting to connect" (for another call's reconnection).
type legError struct {
	leg string
	err error
}

func (e *legError) Error() string { return e.err.Error() }
func (e *legError) Unwrap() error { return e.err }

// connectLeg names the leg of the handshake a failed mcp.Connect failed in,
// or "connecting" when it does not say.
func connectLeg(err error) string {
	if ce := (*mcp.ConnectError)(nil); errors.As(err, &ce) {
		return ce.Leg
	}
	return "connecting"
}

// legOf returns the leg err names, or "".
func legOf(err error) string {
	if le := (*legError)(nil); errors.As(err, &le) {
		return le.leg
	}
	return ""
}

// acquire takes s.sem, or gives up when ctx ends.
func (s *server) acquire(ctx context.Context) error {
	select {
	case s.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return &legError{leg: "waiting to connect", err: fmt.Errorf("catalogue: server %q: waiting for another call's connection: %w", s.cfg.Name, context.Cause(ctx))}
	}
}

func (s *server) release() { <-s.sem }

// client returns a live connection, connecting or reconnecting under ctx,
// bounded by b's connect bound, if there is none. A connection known to be
// gone is replaced before anything is sent on it. tool names the tool the
// connection is for, if any, in the cause of a passed bound.
func (s *server) client(ctx context.Context, b Budget, tool string) (*conn, error) {
	s.mu.Lock()
	c := s.conn
	s.mu.Unlock()
	if c != nil && !c.isGone() {
		return c, nil
	}
	ctx, cancel := withConnectBound(ctx, b, s.cfg.Name, tool)
	defer cancel()
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	return s.connectLocked(ctx)
}

// connectLocked is client with s.sem held.
func (s *server) connectLocked(ctx context.Context) (*conn, error) {
	if s.cat.closed.Load() {
		return nil, ErrClosed
	}
	s.mu.Lock()
	old := s.conn
	if old != nil && !old.isGone() {
		s.mu.Unlock()
		return old, nil // another call reconnected while this one waited
	}
	s.conn = nil
	s.mu.Unlock()
	if old != nil {
		// The old client's connection is gone, but closing it may still
		// wait for a subprocess to exit: do that aside, bounded by
		// mcp.Client.Close, and let Catalogue.Close wait for it.
		s.cat.closeAside(old.client)
		s.logger.Info("catalogue: reconnecting to server")
	}

	t, err := s.cat.opts.Dial(ctx, s.cfg)
	if err != nil {
		return nil, &legError{leg: "connecting", err: fmt.Errorf("catalogue: server %q: %w", s.cfg.Name, err)}
	}
	c := &conn{}
	var opts mcp.ClientOptions
	if s.cat.opts.Client != nil {
		opts = *s.cat.opts.Client
	}
	if s.cfg.Protocol != "" {
		opts.ProtocolVersion = s.cfg.Protocol
	}
	opts.Logger = s.clientLogger()                           // the process log, and server logs to runs: serverlog.go
	opts.OnListChanged = s.onListChanged(opts.OnListChanged) // see listchanged.go
	if s.cat.opts.Elicitation && opts.ElicitationHandler == nil {
		opts.ElicitationHandler = s.elicit // see elicit.go
	}
	client, err := mcp.Connect(ctx, t, &opts)
	if err != nil {
		return nil, &legError{leg: connectLeg(err), err: needsLogin(s.cfg.Name, fmt.Errorf("catalogue: server %q: %w", s.cfg.Name, err))}
	}
	if client.ProtocolVersion() == mcp.Version20260728 {
		// On 2026-07-28 a server logs while it serves a request only if
		// the request asks (its _meta logLevel); SetLoggingLevel there
		// sends nothing and costs nothing. Handshake-era servers log at
		// their own default level: asking would be a round trip more in
		// every connect. Info and above is what a run's timeline keeps.
		if err := client.SetLoggingLevel(ctx, "info", nil); err != nil {
			s.logger.Warn("catalogue: asking for server logs", "server", s.cfg.Name, "err", err)
		}
	}
	c.client = client
	s.mu.Lock()
	s.conn = c
	s.mu.Unlock()
	if s.cat.closed.Load() {
		// The catalogue closed while this connection was being made;
		// Close may or may not have seen it.
		if s.take() == c {
			client.Close()
		}
		return nil, ErrClosed
	}
	s.logger.Debug("catalogue: connected", "protocol", client.ProtocolVersion())
	return c, nil
}

// isGone reports whether c can no longer serve a call: its client says so
// (closed, or its connection lost), or a call found it so.
func (c *conn) isGone() bool {
	return c.gone.Load() || (c.client != nil && c.client.Err() != nil)
}

// drop marks c as gone, so that the next call reconnects.
func (s *server) drop(c *conn) { c.gone.Store(true) }

// take removes and returns the current connection, for closing.
func (s *server) take() *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.conn
	s.conn = nil
	return c
}

func (s *server) imported() []*Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools
}

// startImport returns the import of the server's tools under way, starting
// one, on a goroutine of its own bounded by the server's budget, if there
// is none — unless the last import failed and its back-off has not passed:
// then it returns nil. first reports whether the server has never failed
// to import: a listing waits for such an import, and not for the retry of
// one that failed. The import keeps ctx's values (the run it is for) but
// not its cancellation: other listings may be waiting for it too. Close
// ends it.
func (s *server) startImport(ctx context.Context) (f *flight, first bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	first = s.failures == 0
	if s.flight != nil {
		return s.flight, first
	}
	if s.tools != nil || time.Now().Before(s.retryAt) {
		return nil, first
	}
	f = &flight{done: make(chan struct{}), started: time.Now()}
	b := s.cfg.importBudget()
	ictx := context.WithoutCancel(ctx)
	if id := agent.RunIDFrom(ctx); id != "" {
		// What the import sends out over HTTP is audited under its run.
		ictx = egress.WithRun(ictx, id)
	}
	ictx, cancel := withBudget(ictx, b, s.cfg.Name, "")
	if !s.cat.goAside(func() {
		defer close(f.done)
		defer cancel()
		defer context.AfterFunc(s.cat.importsCtx, cancel)()
		tools, err := s.fetch(ictx, b)
		s.finish(f, tools, err, time.Now())
	}) {
		cancel()
		return nil, first // closed
	}
	s.flight = f
	return f, first
}

// wait waits for the import to end, or for ctx to.
func (f *flight) wait(ctx context.Context) {
	select {
	case <-f.done:
	case <-ctx.Done():
	}
}

// finish records the outcome of the import f.
func (s *server) finish(f *flight, tools []*Tool, err error, now time.Time) {
	if err != nil {
		s.failed(f, err, now)
		return
	}
	s.mu.Lock()
	s.tools, s.lastErr, s.failures, s.failedAt, s.retryAt = tools, nil, 0, time.Time{}, time.Time{}
	s.flight = nil
	s.mu.Unlock()
	s.cat.invalidate()
	s.logger.Info("catalogue: imported tools", "count", len(tools))
	s.cat.reportImport(s.cfg.Name, nil)
}

// failed records an import that failed at now (f, if it was one that
// listings wait for), and when the next may begin: the back-off doubles
// with each failure in a row, from [Options].ImportBackoff up to
// MaxImportBackoff.
func (s *server) failed(f *flight, err error, now time.Time) {
	s.mu.Lock()
	if f != nil && s.flight == f {
		s.flight = nil
	}
	if s.cat.closed.Load() {
		s.mu.Unlock()
		return // the catalogue closed, ending the import: not the server's doing
	}
	s.lastErr = err
	s.failures++
	backoff := s.cat.opts.ImportBackoff
	for i := 1; i < s.failures && backoff < s.cat.opts.MaxImportBackoff; i++ {
		backoff *= 2
	}
	backoff = min(backoff, s.cat.opts.MaxImportBackoff)
	s.failedAt, s.retryAt = now, now.Add(backoff)
	offered := s.tools != nil
	s.mu.Unlock()
	msg := "catalogue: importing tools failed; the server's tools are left out until it imports"
	if offered {
		msg = "catalogue: importing tools again failed; the tools imported before stay offered"
	}
	s.logger.Warn(msg, "error", err, "retry_in", backoff)
	s.cat.reportImport(s.cfg.Name, err)
}

// reimport lists the server's tools again, imported or not, under ctx
// bounded by the server's budget, and replaces them — unless one of them
// would share its local name with another server's tool. On failure, the
// tools imported before stay offered.
func (s *server) reimport(ctx context.Context) error {
	b := s.cfg.importBudget()
	ctx, cancel := withBudget(ctx, b, s.cfg.Name, "")
	defer cancel()
	tools, err := s.fetch(ctx, b)
	if err == nil {
		err = s.cat.commit(s, tools)
	}
	if err != nil {
		s.failed(nil, err, time.Now())
		return err
	}
	s.mu.Lock()
	s.lastErr, s.failures, s.failedAt, s.retryAt = nil, 0, time.Time{}, time.Time{}
	s.mu.Unlock()
	s.cat.reportImport(s.cfg.Name, nil)
	s.logger.Info("catalogue: imported tools again", "count", len(tools))
	return nil
}

// fetch connects if need be, runs tools/list and makes the catalogue's
// tools of the answer, under ctx and b.
func (s *server) fetch(ctx context.Context, b Budget) ([]*Tool, error) {
	remote, err := s.listTools(ctx, b)
	if err != nil {
		return nil, s.importError(err)
	}
	tools, err := s.makeTools(remote)
	if err != nil {
		return nil, s.importError(err)
	}
	return tools, nil
}

func (s *server) importError(err error) error {
	return &ImportError{Server: s.cfg.Name, Leg: legOf(err), Err: err, secrets: serverSecrets(&s.cfg)}
}

// state describes the server's imports: its imported tools, when the next
// import may begin if the last one failed, and the last one's error.
func (s *server) state() (tools []*Tool, retryAt time.Time, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools, s.retryAt, s.lastErr
}

// listTools runs tools/list. Listing changes nothing, so unlike a tool call
// it is repeated once on a new connection if the connection turns out to be
// gone.
func (s *server) listTools(ctx context.Context, b Budget) ([]mcp.Tool, error) {
	for attempt := 1; ; attempt++ {
		c, err := s.client(ctx, b, "")
		if err != nil {
			return nil, err
		}
		tools, err := c.client.ListTools(ctx, nil)
		if errors.Is(err, mcp.ErrClosed) && !s.cat.closed.Load() {
			s.drop(c)
			if attempt == 1 && ctx.Err() == nil {
				continue
			}
		}
		if err != nil {
			return nil, &legError{leg: "tools/list", err: err}
		}
		return tools, nil
	}
}

// makeTools turns the server's tools into catalogue tools.
func (s *server) makeTools(remote []mcp.Tool) ([]*Tool, error) {
	tools := make([]*Tool, 0, len(remote))
	seen := map[string]string{} // local name → remote name
	offered := map[string]bool{}
	for _, rt := range remote {
		if rt.Name == "" {
			s.logger.Warn("catalogue: ignoring a tool without a name")
			continue
		}
		name := LocalName(s.cfg.Name, rt.Name)
		if other, ok := seen[name]; ok {
			return nil, &nameCollisionError{local: name,
				a: remoteRef{s.cfg.Name, other}, b: remoteRef{s.cfg.Name, rt.Name}}
		}
		seen[name] = rt.Name
		offered[rt.Name] = true
		tools = append(tools, newTool(s, name, rt))
	}
	for _, name := range sortedKeys(s.cfg.Effects) {
		if !offered[name] {
			s.logger.Warn("catalogue: effects names a tool the server does not offer", "tool", name)
		}
	}
	for _, name := range sortedKeys(s.cfg.Tools) {
		if !offered[name] {
			s.logger.Warn("catalogue: tools names a tool the server does not offer", "tool", name)
		}
	}
	return tools, nil
}

// EffectOf decides the effect of the tool t of server s. The operator's
// classification (s.Effects) wins. Without one, a tool is a non-idempotent
// write — unless s.TrustAnnotations is set and the server's annotations say
// readOnlyHint (read_only) or idempotentHint (idempotent_write). The second
// result says where the effect came from: "operator", "annotations" or
// "default".
func EffectOf(s *Server, t mcp.Tool) (agent.Effect, string) {
	if e, ok := s.Effects[t.Name]; ok {
		return e, "operator"
	}
	if s.TrustAnnotations && t.Annotations != nil {
		a := t.Annotations
		if a.ReadOnlyHint != nil && *a.ReadOnlyHint {
			return agent.EffectReadOnly, "annotations"
		}
		if a.IdempotentHint != nil && *a.IdempotentHint {
			return agent.EffectIdempotentWrite, "annotations"
		}
	}
	return agent.EffectNonIdempotentWrite, "default"
}
