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
	"strings"
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
	// it. Nil means [DefaultDial], with HTTPClient. Tests use it to serve a
	// server in the same process.
	Dial func(ctx context.Context, s Server) (mcp.Transport, error)
	// HTTPClient returns the HTTP client of a server reached by URL, for
	// the transport of the default Dial: a client that vets, credentials
	// and audits every request (andon's egress), say. It is called for
	// every (re)connection, under the context that Dial is; an error fails
	// that connection. Nil, or a nil client, means http.DefaultClient.
	// Unused when Dial is set.
	HTTPClient func(ctx context.Context, s Server) (*http.Client, error)
	// Client is the template of every server's client options; the
	// server's Protocol and the Logger replace its ProtocolVersion and
	// Logger. Nil means the zero mcp.ClientOptions. A tool call's
	// Timeout comes from its budget ([Server].Budget), so RequestTimeout
	// bounds only the other requests, within the operation's budget.
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

	// ListGrace bounds how long after its start a listing waits for a
	// server's first import, once another server has tools to offer (see
	// [Catalogue.List]). Zero means DefaultListGrace.
	ListGrace time.Duration

	// OnCall, if set, is told of every call of a tool once it has ended
	// (see [CallReport]); not of a tool an operator has disabled, which is
	// not called. It runs on the caller's goroutine before Call returns:
	// keep it short. Nil costs nothing.
	OnCall func(CallReport)
	// OnCancelOutcome, if set, is told what became of each call of a
	// tool that was cancelled once its request had gone out (see
	// mcp.CancelOutcome), by server: a few seconds after the call at
	// most. It must not block. With Audit, the outcome is an audit row
	// too (audit.ActionCancelOutcome).
	OnCancelOutcome func(server string, outcome mcp.CancelOutcome)
	// Audit, if set, records one audit row per call of a tool once it
	// has ended, on every transport (audit.ActionToolCall: the run, the
	// server, the call as an approval names it, its outcome and, for a
	// call that did not end with a result, why); not of a tool an operator
	// has disabled or whose server is unavailable, which sends nothing. A
	// row that cannot be written is logged. Nil: calls are not audited
	// here (egress still audits each HTTP request).
	Audit agent.Auditor

	// ImportBackoff is how long a server whose import failed is left
	// alone before the next listing tries it again; it doubles with each
	// failure in a row, up to MaxImportBackoff, and starts over once an
	// import succeeds. Zero means DefaultImportBackoff, and zero
	// MaxImportBackoff means DefaultMaxImportBackoff (or ImportBackoff,
	// if longer).
	ImportBackoff, MaxImportBackoff time.Duration
	// OnImport, if set, is told of every import of a server's tools once
	// it has ended: err is nil if it succeeded, else an [*ImportError].
	// Keep it short. Nil costs nothing.
	OnImport func(server string, err error)

	// Elicitation makes every server's client declare the elicitation
	// capability and put the questions a server asks during a tool call
	// to the operator of the call's run (see elicit.go and agent.Ask),
	// unless Client sets an ElicitationHandler of its own. False: the
	// capability is not declared.
	Elicitation bool
}

// DefaultListGrace is [Options].ListGrace's default: long enough for the
// servers started with the first listing to finish their handshakes
// together (a stdio server starts in tens of milliseconds), short enough
// that a server that stalls costs a run no more.
const DefaultListGrace = 250 * time.Millisecond

// Defaults of [Options].ImportBackoff and MaxImportBackoff.
const (
	DefaultImportBackoff    = 5 * time.Second
	DefaultMaxImportBackoff = time.Minute
)

// Catalogue is the set of tools imported from the enabled MCP servers of a
// [Config]. It implements [agent.Tools].
//
// Each server has one long-lived [mcp.Client], made when it is first
// needed. The first [Catalogue.List] imports every server's tools
// (tools/list, following pagination), each server on its own, bounded by
// its budget ([Server].Budget), and keeps them. A server that fails to
// import is left out of the listing, not an error for it — unless no
// server could be imported at all — and is reported ([Catalogue.Servers],
// [Options].OnImport, the log). It is left alone for a back-off
// ([Options].ImportBackoff, doubling up to MaxImportBackoff); then a
// listing tries it again without waiting for it, and its tools are
// offered from the listing after it imports. A listing never waits for
// an import that failed before, and an import holds no lock that another
// server's calls or imports need. [Catalogue.Import] lists a server's
// tools again, at once.
//
// [Catalogue.Tool] imports only the server a name belongs to, if it must.
// The name of a tool of a server that cannot be imported is a tool whose
// Call fails without sending anything, saying which server failed, and in
// which leg (initialize, tools/list...), so a run that needs it gets a
// failed step and goes on or ends as its model decides.
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

	// bg counts the imports under way and the closing of clients that
	// were replaced; once Close has begun waiting for them (bgDone), no
	// import starts and replaced clients are closed in place instead.
	// stopImports ends the imports under way.
	bgMu        sync.Mutex
	bg          sync.WaitGroup
	bgDone      bool
	importsCtx  context.Context
	stopImports context.CancelFunc

	mu       sync.Mutex
	indexed  bool             // list, byName and indexErr are of the servers' tools as imported now
	list     []*Tool          // every tool of the servers imported
	byName   map[string]*Tool // by local name, likewise
	indexErr error            // two tools that would share a local name
	changed  chan struct{}    // closed at the next change (Changed); nil: nobody waits
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
		client := c.opts.HTTPClient
		c.opts.Dial = func(ctx context.Context, s Server) (mcp.Transport, error) { return dial(ctx, s, client) }
	}
	if c.opts.MaxResultBytes <= 0 {
		c.opts.MaxResultBytes = DefaultMaxResultBytes
	}
	c.logger = c.opts.Logger
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	if c.opts.ListGrace <= 0 {
		c.opts.ListGrace = DefaultListGrace
	}
	if c.opts.SettingsMaxAge == 0 {
		c.opts.SettingsMaxAge = DefaultSettingsMaxAge
	}
	if c.opts.ImportBackoff <= 0 {
		c.opts.ImportBackoff = DefaultImportBackoff
	}
	if c.opts.MaxImportBackoff <= 0 {
		c.opts.MaxImportBackoff = DefaultMaxImportBackoff
	}
	c.opts.MaxImportBackoff = max(c.opts.MaxImportBackoff, c.opts.ImportBackoff)
	c.importsCtx, c.stopImports = context.WithCancel(context.Background())
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

// List returns every tool of every enabled server that has imported and
// that an operator has not disabled, in configuration order and, within a
// server, in the server's order. The first call imports them, waiting for
// each server at most its budget while no server has tools to offer, and
// once one has, for the others at most [Options].ListGrace after their
// imports started: a server still
// connecting then joins a later listing when it has imported. A server
// that fails is left out (see [Catalogue]). It is an error only when no
// enabled server could be
// imported (the error names each), or when two tools would share a local
// name.
func (c *Catalogue) List(ctx context.Context) ([]agent.Tool, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	var waits []*flight
	for _, s := range c.servers {
		if !s.cfg.IsEnabled() {
			continue
		}
		if f, first := s.startImport(ctx); f != nil && first {
			waits = append(waits, f)
		}
	}
	c.awaitFirstImports(ctx, waits)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("catalogue: listing tools: %w", context.Cause(ctx))
	}
	if c.closed.Load() {
		return nil, ErrClosed // while it waited
	}
	list, _, err := c.index()
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		if err := c.noneImported(); err != nil {
			return nil, err
		}
	}
	if err := c.settings.fresh(ctx); err != nil {
		return nil, err
	}
	out := make([]agent.Tool, 0, len(list))
	for _, t := range list {
		if v := c.snapshot(t); v.enabled {
			out = append(out, v)
		}
	}
	return out, nil
}

// awaitFirstImports waits for the first imports of servers that a listing
// started or found under way: all of them, while no server has tools to
// offer; once one has, none past ListGrace after the newest of them
// started. So the first run after a start does not wait out a server that
// is still connecting when others can already serve it, and later runs do
// not wait for it at all; the late server's tools join a later listing —
// the model's next turn — when its import ends.
func (c *Catalogue) awaitFirstImports(ctx context.Context, waits []*flight) {
	if len(waits) == 0 {
		return
	}
	var newest time.Time
	for _, f := range waits {
		if f.started.After(newest) {
			newest = f.started
		}
	}
	ended := make(chan struct{}, len(waits))
	stop := make(chan struct{})
	defer close(stop)
	for _, f := range waits {
		go func() {
			select {
			case <-f.done:
				ended <- struct{}{}
			case <-stop:
			}
		}()
	}
	var grace <-chan time.Time
	for left := len(waits); left > 0; {
		if grace == nil && c.anyImported() {
			t := time.NewTimer(time.Until(newest.Add(c.opts.ListGrace)))
			defer t.Stop()
			grace = t.C
		}
		select {
		case <-ended:
			left--
		case <-grace:
			return
		case <-ctx.Done():
			return
		}
	}
}

// anyImported reports whether an enabled server has tools to offer.
func (c *Catalogue) anyImported() bool {
	for _, s := range c.servers {
		if s.cfg.IsEnabled() && s.imported() != nil {
			return true
		}
	}
	return false
}

// Prefetch starts the first import of every enabled server that has not
// imported its tools (and is not in its back-off after a failure), each on
// a goroutine of its own under the server's budget, and returns at once: a
// process that executes runs calls it when it starts, so that the first
// run finds the servers that answer imported already.
func (c *Catalogue) Prefetch(ctx context.Context) {
	for _, s := range c.servers {
		if s.cfg.IsEnabled() {
			s.startImport(ctx)
		}
	}
}

// noneImported returns the import errors of the enabled servers if none of
// them has imported and one has failed, else nil.
func (c *Catalogue) noneImported() error {
	var errs []error
	for _, s := range c.servers {
		if !s.cfg.IsEnabled() {
			continue
		}
		tools, _, err := s.state()
		if tools != nil {
			return nil
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
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
//
// A name of no imported tool is looked for on the servers it may belong to
// (by its prefix, mcp_<server>_) that have not imported: each is imported,
// waiting for it at most its budget, unless it is in its back-off. A name
// that belongs to a server that failed to import is a tool that is
// unavailable: its Call sends nothing and fails, saying which server
// failed and how.
func (c *Catalogue) Lookup(ctx context.Context, name string) (*Tool, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	_, byName, err := c.index()
	if err != nil {
		return nil, err
	}
	t := byName[name]
	if t == nil {
		var candidates []*server
		for _, s := range c.servers {
			if s.cfg.IsEnabled() && s.imported() == nil && strings.HasPrefix(name, LocalName(s.cfg.Name, "")) {
				candidates = append(candidates, s)
			}
		}
		if len(candidates) == 0 {
			return nil, nil
		}
		for _, s := range candidates {
			if f, _ := s.startImport(ctx); f != nil {
				f.wait(ctx)
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("catalogue: looking up tool %q: %w", name, context.Cause(ctx))
		}
		if _, byName, err = c.index(); err != nil {
			return nil, err
		}
		if t = byName[name]; t == nil {
			for _, s := range candidates {
				if tools, retryAt, err := s.state(); tools == nil && err != nil {
					return unavailableTool(s, name, err, retryAt), nil
				}
			}
			return nil, nil
		}
	}
	if err := c.settings.fresh(ctx); err != nil {
		return nil, err
	}
	return c.snapshot(t), nil
}

// snapshot returns t with the operator's setting applied, as last read.
func (c *Catalogue) snapshot(t *Tool) *Tool {
	st, ok := c.settings.get(t.srv.cfg.Name, t.remote.Name)
	return t.with(st, ok)
}

// index returns the tools of the servers imported now, indexing them by
// local name first if an import changed them. Two tools with one local
// name are an error, naming both in configuration order, and nothing is
// offered until an operator disables one of the servers.
func (c *Catalogue) index() ([]*Tool, map[string]*Tool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.indexed {
		c.indexErr = c.indexLocked()
		c.indexed = true
	}
	return c.list, c.byName, c.indexErr
}

// invalidate makes the next index read the servers' tools again.
func (c *Catalogue) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changedLocked()
}

// changedLocked marks the index stale and tells those waiting on Changed,
// with c.mu held.
func (c *Catalogue) changedLocked() {
	c.indexed = false
	if c.changed != nil {
		close(c.changed)
		c.changed = nil
	}
}

// Changed returns a channel that is closed the next time the tools the
// catalogue offers may have changed: a server imported its tools, or
// imported them again after it said they changed (list_changed) or failed
// a call as an unknown tool. A listing made then sees the change; a
// gateway tells its own clients that the list changed. Operators' settings
// (a tool disabled) are read when listed and do not close it.
func (c *Catalogue) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.changed == nil {
		c.changed = make(chan struct{})
	}
	return c.changed
}

// indexLocked indexes the imported tools by local name, with c.mu held.
func (c *Catalogue) indexLocked() error {
	byName := map[string]*Tool{}
	var list []*Tool
	for _, s := range c.servers {
		if !s.cfg.IsEnabled() {
			continue
		}
		for _, t := range s.imported() {
			if other, ok := byName[t.name]; ok {
				c.byName, c.list = nil, nil
				return &nameCollisionError{local: t.name,
					a: remoteRef{other.srv.cfg.Name, other.remote.Name},
					b: remoteRef{s.cfg.Name, t.remote.Name}}
			}
			byName[t.name] = t
			list = append(list, t)
		}
	}
	c.byName, c.list = byName, list
	return nil
}

// reportImport tells OnImport of an import that ended.
func (c *Catalogue) reportImport(server string, err error) {
	if c.opts.OnImport != nil {
		c.opts.OnImport(server, err)
	}
}

// Close closes every server's client, each within the bound of
// [mcp.Client.Close], all at once. Calls in flight fail; later calls and
// listings return [ErrClosed]. It returns the clients' errors, if any.
func (c *Catalogue) Close() error {
	if c.closed.Swap(true) {
		c.waitAside()
		return nil
	}
	c.stopImports()
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

// goAside runs f on a goroutine that Close waits for, unless Close has
// begun waiting: then it reports false and f does not run.
func (c *Catalogue) goAside(f func()) bool {
	c.bgMu.Lock()
	defer c.bgMu.Unlock()
	if c.bgDone {
		return false
	}
	c.bg.Go(f)
	return true
}

// waitAside waits for the imports and the clients closeAside is closing.
func (c *Catalogue) waitAside() {
	c.bgMu.Lock()
	c.bgDone = true
	c.bgMu.Unlock()
	c.bg.Wait()
}

// DefaultDial returns the transport of s: a subprocess for a command (with
// "@andon" replaced by os.Executable, and the environment described at
// [Server].Env), an HTTP transport for a URL.
func DefaultDial(ctx context.Context, s Server) (mcp.Transport, error) {
	return dial(ctx, s, nil)
}

// dial is [DefaultDial], with the HTTP client of a URL's transport from
// client, if set.
func dial(ctx context.Context, s Server, client func(context.Context, Server) (*http.Client, error)) (mcp.Transport, error) {
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
	var hc *http.Client
	if client != nil {
		var err error
		if hc, err = client(ctx, s); err != nil {
			return nil, fmt.Errorf("catalogue: server %q: %w", s.Name, err)
		}
	}
	t := mcp.HTTP(s.URL, hc)
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
	s.Tools = maps.Clone(s.Tools)
	s.Scopes = slices.Clone(s.Scopes)
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
