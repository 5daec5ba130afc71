package catalogue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/mcp"
)

// server is one configured server: its long-lived client and its imported
// tools. A server disabled in the configuration never connects.
type server struct {
	cat    *Catalogue
	cfg    Server
	logger *slog.Logger

	// sem is held while connecting or importing. It is a channel, not a
	// mutex, so that a call waiting for another call's reconnection can
	// give up when its own context ends.
	sem chan struct{}

	mu      sync.Mutex
	conn    *conn   // nil until connected, and after the connection is dropped
	tools   []*Tool // nil until imported
	lastErr error   // of the last import, nil if it succeeded
}

// conn is one connection to the server.
type conn struct {
	client *mcp.Client
	// gone is set once a call on the connection failed with mcp.ErrClosed;
	// the client's own Err says when it learned so first.
	gone atomic.Bool
}

// acquire takes s.sem, or gives up when ctx ends.
func (s *server) acquire(ctx context.Context) error {
	select {
	case s.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *server) release() { <-s.sem }

// client returns a live connection, connecting or reconnecting under ctx if
// there is none. A connection known to be gone is replaced before anything
// is sent on it.
func (s *server) client(ctx context.Context) (*conn, error) {
	s.mu.Lock()
	c := s.conn
	s.mu.Unlock()
	if c != nil && !c.isGone() {
		return c, nil
	}
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
		return nil, fmt.Errorf("catalogue: server %q: %w", s.cfg.Name, err)
	}
	c := &conn{}
	var opts mcp.ClientOptions
	if s.cat.opts.Client != nil {
		opts = *s.cat.opts.Client
	}
	if s.cfg.Protocol != "" {
		opts.ProtocolVersion = s.cfg.Protocol
	}
	opts.Logger = s.logger
	client, err := mcp.Connect(ctx, t, &opts)
	if err != nil {
		return nil, fmt.Errorf("catalogue: server %q: %w", s.cfg.Name, err)
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

// load imports the server's tools, unless it already has.
func (s *server) load(ctx context.Context) error {
	if s.imported() != nil {
		return nil
	}
	if err := s.acquire(ctx); err != nil {
		return s.importError(err)
	}
	defer s.release()
	if s.imported() != nil {
		return nil
	}
	tools, err := s.fetch(ctx)
	if err != nil {
		s.setErr(err)
		return err
	}
	s.mu.Lock()
	s.tools, s.lastErr = tools, nil
	s.mu.Unlock()
	s.logger.Info("catalogue: imported tools", "count", len(tools))
	return nil
}

// reimport lists the server's tools again, imported or not, and replaces
// them — unless one of them would share its local name with another
// server's tool. On failure, the tools imported before stay offered.
func (s *server) reimport(ctx context.Context) error {
	if err := s.acquire(ctx); err != nil {
		return s.importError(err)
	}
	defer s.release()
	tools, err := s.fetch(ctx)
	if err == nil {
		err = s.cat.commit(s, tools)
	}
	s.setErr(err)
	if err != nil {
		return err
	}
	s.logger.Info("catalogue: imported tools again", "count", len(tools))
	return nil
}

// fetch runs tools/list and makes the catalogue's tools of the answer, with
// s.sem held.
func (s *server) fetch(ctx context.Context) ([]*Tool, error) {
	remote, err := s.listTools(ctx)
	if err != nil {
		return nil, s.importError(err)
	}
	return s.makeTools(remote)
}

func (s *server) importError(err error) error {
	return &ImportError{Server: s.cfg.Name, Err: err, secrets: serverSecrets(&s.cfg)}
}

func (s *server) setErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastErr = err
}

// state returns the server's imported tools and the error of its last
// import.
func (s *server) state() ([]*Tool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools, s.lastErr
}

// listTools runs tools/list (with s.sem held). Listing changes nothing, so
// unlike a tool call it is repeated once on a new connection if the
// connection turns out to be gone.
func (s *server) listTools(ctx context.Context) ([]mcp.Tool, error) {
	for attempt := 1; ; attempt++ {
		c, err := s.connectLocked(ctx)
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
		return tools, err
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
