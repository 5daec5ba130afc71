package catalogue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/mcp"
)

// DefaultMaxResultBytes bounds the text of one tool result that a model
// reads.
const DefaultMaxResultBytes = 64 << 10

// ErrClosed reports a use of a closed [Catalogue]. It matches
// [mcp.ErrClosed] too.
var ErrClosed = fmt.Errorf("catalogue: closed: %w", mcp.ErrClosed)

// Options configure a [Catalogue]. The zero value is ready to use; each
// field says what its zero value means.
type Options struct {
	// Dial returns the transport to a server. It is called for every
	// (re)connection, under the context of the call or listing that needs
	// it. Nil means [DefaultDial]. Tests use it to serve a server in the
	// same process.
	Dial func(ctx context.Context, s Server) (mcp.Transport, error)
	// Client is the template of every server's client options; the
	// server's Protocol and the Logger replace its ProtocolVersion and
	// Logger. Nil means the zero mcp.ClientOptions.
	Client *mcp.ClientOptions
	// Logger receives the catalogue's and the clients' diagnostics, each
	// with a "server" attribute. Nil means discard them.
	Logger *slog.Logger
	// MaxResultBytes bounds the text of one tool result given to the
	// model; longer text is cut, with a note saying so. Zero means
	// DefaultMaxResultBytes.
	MaxResultBytes int

	// Settings holds the operators' tool settings (enabled, effect,
	// approval), which win over andon.yaml and over annotations. Every
	// process on one database applies them: see SettingsMaxAge. Nil means
	// there are none, and [Catalogue.SetTool] fails.
	Settings SettingsStore
	// SettingsMaxAge bounds how old the settings that List and Lookup
	// apply may be: they are read again when older, so a change made by
	// another process applies within about this long. Zero means
	// DefaultSettingsMaxAge; negative means read them on every List and
	// Lookup.
	SettingsMaxAge time.Duration

	// OnCall, if set, is told of every call of a tool once it has ended
	// (see [CallReport]); not of a tool an operator has disabled, which is
	// not called. It runs on the caller's goroutine before Call returns:
	// keep it short. Nil costs nothing.
	OnCall func(CallReport)
}

// Catalogue is the set of tools imported from the enabled MCP servers of a
// [Config]. It implements [agent.Tools].
//
// Each server has one long-lived [mcp.Client], made when it is first
// needed. The first [Catalogue.List] or [Catalogue.Tool] imports every
// server's tools (tools/list, following pagination) and keeps them; a server
// that fails to import fails the listing, naming it, and is tried again on
// the next one. [Catalogue.Import] lists a server's tools again.
//
// Operators' settings ([Options].Settings) apply to every List and Lookup:
// see the package documentation.
//
// A call made when the server's connection is known to be gone (the server
// exited, the session expired) reconnects first, under the call's own
// context: cancelling the call abandons the reconnection and its handshake.
// A call whose connection fails after the request may have been sent is
// never retried — it may have happened — and fails; the next call
// reconnects.
type Catalogue struct {
	opts     Options
	logger   *slog.Logger
	servers  []*server // every configured server, in configuration order
	settings *settings
	closed   atomic.Bool

	// bg counts the closing of clients that were replaced; once Close has
	// begun waiting for them (bgDone), replaced clients are closed in
	// place instead.
	bgMu   sync.Mutex
	bg     sync.WaitGroup
	bgDone bool

	mu     sync.Mutex
	list   []*Tool          // every tool, once every enabled server has imported
	byName map[string]*Tool // by local name, likewise
}

var _ agent.Tools = (*Catalogue)(nil)

// New returns a catalogue of cfg's enabled servers. It validates cfg and
// connects to nothing: connections are made when first needed. A nil opts
// is the zero Options.
func New(cfg *Config, opts *Options) (*Catalogue, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Catalogue{}
	if opts != nil {
		c.opts = *opts
	}
	if c.opts.Dial == nil {
		c.opts.Dial = DefaultDial
	}
	if c.opts.MaxResultBytes <= 0 {
		c.opts.MaxResultBytes = DefaultMaxResultBytes
	}
	c.logger = c.opts.Logger
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	if c.opts.SettingsMaxAge == 0 {
		c.opts.SettingsMaxAge = DefaultSettingsMaxAge
	}
	c.settings = &settings{store: c.opts.Settings, maxAge: c.opts.SettingsMaxAge, logger: c.logger}
	for _, s := range cfg.Servers {
		c.servers = append(c.servers, &server{
			cat:    c,
			cfg:    cloneServer(s),
			logger: c.logger.With("server", s.Name),
			sem:    make(chan struct{}, 1),
		})
	}
	return c, nil
}

// List returns every tool of every enabled server that an operator has
// not disabled, in configuration order and, within a server, in the
// server's order. The first call imports them.
func (c *Catalogue) List(ctx context.Context) ([]agent.Tool, error) {
	if err := c.load(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	list := c.list
	c.mu.Unlock()
	out := make([]agent.Tool, 0, len(list))
	for _, t := range list {
		if v := c.snapshot(t); v.enabled {
			out = append(out, v)
		}
	}
	return out, nil
}

// Tool returns the tool offered as name, or nil if there is none.
func (c *Catalogue) Tool(ctx context.Context, name string) (agent.Tool, error) {
	t, err := c.Lookup(ctx, name)
	if t == nil || err != nil {
		return nil, err // never a typed nil in the interface
	}
	return t, nil
}

// Lookup is [Catalogue.Tool] with the concrete type. It finds a tool an
// operator has disabled too: its Call fails, saying so, and sends nothing.
func (c *Catalogue) Lookup(ctx context.Context, name string) (*Tool, error) {
	if err := c.load(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	t := c.byName[name]
	c.mu.Unlock()
	if t == nil {
		return nil, nil
	}
	return c.snapshot(t), nil
}

// snapshot returns t with the operator's setting applied, as last read.
func (c *Catalogue) snapshot(t *Tool) *Tool {
	st, ok := c.settings.get(t.srv.cfg.Name, t.remote.Name)
	return t.with(st, ok)
}

// load imports every enabled server's tools, once, and indexes them by
// local name; then brings the operators' settings up to date.
func (c *Catalogue) load(ctx context.Context) error {
	if c.closed.Load() {
		return ErrClosed
	}
	c.mu.Lock()
	done := c.byName != nil
	c.mu.Unlock()
	if !done {
		// Import the servers side by side: each under its own lock, each
		// honouring ctx.
		errs := make([]error, len(c.servers))
		var wg sync.WaitGroup
		for i, s := range c.servers {
			if s.cfg.IsEnabled() {
				wg.Go(func() { errs[i] = s.load(ctx) })
			}
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		c.mu.Lock()
		err := c.indexLocked()
		c.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return c.settings.fresh(ctx)
}

// indexLocked indexes the imported tools by local name, with c.mu held. The
// index is kept only once every enabled server has imported. Two tools with
// one local name are an error, naming both in configuration order.
func (c *Catalogue) indexLocked() error {
	byName := map[string]*Tool{}
	var list []*Tool
	complete := true
	for _, s := range c.servers {
		if !s.cfg.IsEnabled() {
			continue
		}
		tools := s.imported()
		complete = complete && tools != nil
		for _, t := range tools {
			if other, ok := byName[t.name]; ok {
				return &nameCollisionError{local: t.name,
					a: remoteRef{other.srv.cfg.Name, other.remote.Name},
					b: remoteRef{s.cfg.Name, t.remote.Name}}
			}
			byName[t.name] = t
			list = append(list, t)
		}
	}
	if complete {
		c.byName, c.list = byName, list
	}
	return nil
}

// Close closes every server's client, each within the bound of
// [mcp.Client.Close], all at once. Calls in flight fail; later calls and
// listings return [ErrClosed]. It returns the clients' errors, if any.
func (c *Catalogue) Close() error {
	if c.closed.Swap(true) {
		c.waitAside()
		return nil
	}
	errs := make([]error, len(c.servers))
	var wg sync.WaitGroup
	for i, s := range c.servers {
		if cl := s.take(); cl != nil {
			wg.Go(func() {
				if err := cl.client.Close(); err != nil {
					errs[i] = fmt.Errorf("catalogue: closing server %q: %w", s.cfg.Name, err)
				}
			})
		}
	}
	wg.Wait()
	c.waitAside()
	return errors.Join(errs...)
}

// closeAside closes a client whose connection is gone without making the
// caller wait for it, unless Close is already waiting.
func (c *Catalogue) closeAside(cl *mcp.Client) {
	c.bgMu.Lock()
	if c.bgDone {
		c.bgMu.Unlock()
		cl.Close()
		return
	}
	c.bg.Add(1)
	c.bgMu.Unlock()
	go func() {
		defer c.bg.Done()
		cl.Close()
	}()
}

// waitAside waits for the clients closeAside is closing.
func (c *Catalogue) waitAside() {
	c.bgMu.Lock()
	c.bgDone = true
	c.bgMu.Unlock()
	c.bg.Wait()
}

// DefaultDial returns the transport of s: a subprocess for a command (with
// "@andon" replaced by os.Executable, and the environment described at
// [Server].Env), an HTTP transport for a URL.
func DefaultDial(_ context.Context, s Server) (mcp.Transport, error) {
	if len(s.Command) > 0 {
		path := s.Command[0]
		if path == AndonExecutable {
			exe, err := os.Executable()
			if err != nil {
				return nil, fmt.Errorf("catalogue: server %q: finding the andon executable: %w", s.Name, err)
			}
			path = exe
		}
		t := mcp.Command(path, s.Command[1:]...)
		t.Env = serverEnv(s.Env)
		return t, nil
	}
	if s.URL == "" {
		return nil, fmt.Errorf("catalogue: server %q has neither command nor url", s.Name)
	}
	t := mcp.HTTP(s.URL, nil)
	if len(s.Headers) > 0 {
		t.Header = http.Header{}
		for k, v := range s.Headers {
			t.Header.Set(k, v)
		}
	}
	return t, nil
}

// inheritedEnv are the variables a stdio server gets from andon's
// environment; nothing else is passed on, since andon's environment may
// hold secrets.
var inheritedEnv = []string{"HOME", "LANG", "LC_ALL", "LC_CTYPE", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR", "TZ", "USER"}

func serverEnv(extra map[string]string) []string {
	env := []string{}
	for _, k := range inheritedEnv {
		if _, set := extra[k]; set {
			continue
		}
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for _, k := range sortedKeys(extra) {
		env = append(env, k+"="+extra[k])
	}
	return env
}

func cloneServer(s Server) Server {
	s.Command = slices.Clone(s.Command)
	s.Env = maps.Clone(s.Env)
	s.Headers = maps.Clone(s.Headers)
	s.Effects = maps.Clone(s.Effects)
	if s.RequiresApproval != nil {
		v := *s.RequiresApproval
		s.RequiresApproval = &v
	}
	if s.Enabled != nil {
		v := *s.Enabled
		s.Enabled = &v
	}
	return s
}
