package catalogue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/andonhq/andon/agent"
)

// Errors of the operators' methods ([Catalogue.Import], [Catalogue.Tools],
// [Catalogue.SetTool]).
var (
	// ErrUnknownServer: no server of that name is configured.
	ErrUnknownServer = errors.New("catalogue: no such server")
	// ErrUnknownTool: no imported tool has that local name.
	ErrUnknownTool = errors.New("catalogue: no such tool")
	// ErrServerDisabled: the server is disabled in the configuration
	// (enabled: false), so andon never connects to it.
	ErrServerDisabled = errors.New("catalogue: the server is disabled in the configuration")
	// ErrNoSettingsStore: the catalogue has no [Options].Settings to keep
	// an operator's setting in.
	ErrNoSettingsStore = errors.New("catalogue: no settings store")
	// ErrInvalidChange: a [ToolChange] that changes nothing, or sets an
	// effect that is not one.
	ErrInvalidChange = errors.New("catalogue: invalid tool change")
	// ErrNameCollision: two tools would be offered under one local name.
	ErrNameCollision = errors.New("catalogue: two tools would share a local name")
)

// ImportError reports a server whose tools could not be listed. Its text
// names the server, and none of the server's header values, environment
// values or URL query, which may be secrets.
type ImportError struct {
	Server string
	// Leg is the leg of the import that failed: "tools/list", a leg of
	// the handshake ("server/discover", "initialize",
	// "notifications/initialized"), "connecting" when the handshake did
	// not say, or "waiting to connect"; empty if none failed (two tools
	// would share a local name).
	Leg string
	Err error

	secrets []string
}

// Error names the server and says why its import failed, with the
// server's configured secrets scrubbed from the cause.
func (e *ImportError) Error() string {
	return fmt.Sprintf("catalogue: server %q: importing tools: %s", e.Server, scrub(e.Err.Error(), e.secrets))
}

// Unwrap returns the cause, so that errors.Is and errors.As see the MCP
// client's error (mcp.ErrTimeout, *mcp.ConnectError, …).
func (e *ImportError) Unwrap() error { return e.Err }

// TimedOut reports whether the import failed because a deadline passed:
// the server's budget, or the caller's.
func (e *ImportError) TimedOut() bool { return errors.Is(e.Err, context.DeadlineExceeded) }

// Summary says in a few words what failed, for an operator or a model:
// "timed out during initialize", or the error, without secrets.
func (e *ImportError) Summary() string {
	if e.TimedOut() && e.Leg != "" {
		return "timed out during " + e.Leg
	}
	msg := scrub(e.Err.Error(), e.secrets)
	if e.Leg != "" {
		return "failed during " + e.Leg + ": " + msg
	}
	return msg
}

// ServerInfo describes a configured server to an operator.
type ServerInfo struct {
	Name string
	// Transport is "stdio" (Command) or "http" (URL).
	Transport string
	// URL is an HTTP server's URL without its user information, query or
	// fragment, which may hold secrets.
	URL string
	// Command is a stdio server's command.
	Command []string
	// Enabled is the configuration's: a disabled server is never
	// connected to.
	Enabled bool
	// Imported reports whether the server's tools have been listed; Tools
	// counts them.
	Imported bool
	Tools    int
	// Error is why the last import failed, without secrets; empty if it
	// succeeded or none was tried.
	Error string
	// FailedAt is when the last import failed, and RetryAt when a listing
	// may try the server again (see [Options].ImportBackoff); Failures
	// counts the imports that failed in a row. All zero once an import
	// succeeds.
	FailedAt, RetryAt time.Time
	Failures          int
	// Auth is the server's auth ([AuthOAuth] or empty). NeedsLogin
	// reports that its last import failed for want of an OAuth login:
	// `andon auth login NAME`, or Connect in the console.
	Auth       string
	NeedsLogin bool
	// Change is the last change of the server's tools a re-import found
	// (after notifications/tools/list_changed, or a call to a tool the
	// server no longer has); nil if none.
	Change *ToolsChange
}

// ToolInfo describes an imported tool to an operator, with the settings
// that apply to it now.
type ToolInfo struct {
	// Name is the local name (mcp_<server>_<tool>); Tool the name on the
	// server.
	Name        string
	Server      string
	Tool        string
	Description string

	Enabled          bool
	Effect           agent.Effect
	EffectSource     EffectSource
	RequiresApproval bool

	// UpdatedBy and UpdatedAt say who last changed the operator's
	// setting of the tool, and when; empty if nobody did.
	UpdatedBy string
	UpdatedAt time.Time
}

// Servers describes every configured server, in configuration order. It
// connects to nothing.
func (c *Catalogue) Servers() []ServerInfo {
	out := make([]ServerInfo, 0, len(c.servers))
	for _, s := range c.servers {
		info := ServerInfo{Name: s.cfg.Name, Transport: "stdio", Command: slices.Clone(s.cfg.Command), Enabled: s.cfg.IsEnabled()}
		if s.cfg.URL != "" {
			info.Transport, info.URL = "http", redactURL(s.cfg.URL)
		}
		s.mu.Lock()
		tools, err := s.tools, s.lastErr
		info.FailedAt, info.RetryAt, info.Failures = s.failedAt, s.retryAt, s.failures
		if s.change != nil {
			ch := *s.change
			info.Change = &ch
		}
		s.mu.Unlock()
		info.Imported, info.Tools = tools != nil, len(tools)
		info.Auth, info.NeedsLogin = s.cfg.Auth, errors.Is(err, ErrNeedsLogin)
		if err != nil {
			info.Error = strings.TrimPrefix(err.Error(), "catalogue: ")
		}
		out = append(out, info)
	}
	return out
}

// Tools describes the imported tools of server, or of every server if
// server is empty, in configuration order and, within a server, in the
// server's order. It imports nothing: a server not imported yet has no
// tools here (see [Catalogue.Import]). The operators' settings are brought
// up to date first.
func (c *Catalogue) Tools(ctx context.Context, server string) ([]ToolInfo, error) {
	if server != "" {
		if _, err := c.server(server); err != nil {
			return nil, err
		}
	}
	if err := c.settings.fresh(ctx); err != nil {
		return nil, err
	}
	var out []ToolInfo
	for _, s := range c.servers {
		if server != "" && s.cfg.Name != server || !s.cfg.IsEnabled() {
			continue
		}
		for _, t := range s.imported() {
			out = append(out, c.snapshot(t).info())
		}
	}
	return out, nil
}

// Import connects to the server called name if need be, under ctx, lists
// its tools again and offers them from now on, in place of the ones it
// offered before; and returns them, as [Catalogue.Tools] does. A server
// that fails is an [*ImportError] and keeps offering the tools it had. A
// tool that would share its local name with another server's is an
// [ErrNameCollision], and nothing changes. Calls under way are not
// affected.
func (c *Catalogue) Import(ctx context.Context, name string) ([]ToolInfo, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	s, err := c.server(name)
	if err != nil {
		return nil, err
	}
	if !s.cfg.IsEnabled() {
		return nil, fmt.Errorf("%w: %q", ErrServerDisabled, name)
	}
	if err := s.reimport(ctx); err != nil {
		return nil, err
	}
	return c.Tools(ctx, name)
}

// SetTool records an operator's change of the tool offered as name, made
// by the user called by, in the settings store, and applies it here at
// once; other processes apply it within their SettingsMaxAge. The change
// wins over andon.yaml and over annotations, and applies from the next
// lookup of the tool: a call already under way keeps what it started with.
// It returns the tool as it is now.
func (c *Catalogue) SetTool(ctx context.Context, name string, ch ToolChange, by string) (ToolInfo, error) {
	if c.settings.store == nil {
		return ToolInfo{}, ErrNoSettingsStore
	}
	switch {
	case ch.IsEmpty():
		return ToolInfo{}, fmt.Errorf("%w: it changes nothing", ErrInvalidChange)
	case ch.Effect != "" && !ValidEffect(ch.Effect):
		return ToolInfo{}, fmt.Errorf("%w: effect %q is not %s, %s or %s", ErrInvalidChange, ch.Effect,
			agent.EffectReadOnly, agent.EffectIdempotentWrite, agent.EffectNonIdempotentWrite)
	case by == "":
		return ToolInfo{}, fmt.Errorf("%w: it names nobody who made it", ErrInvalidChange)
	}
	t := c.find(name)
	if t == nil {
		return ToolInfo{}, fmt.Errorf("%w: %q", ErrUnknownTool, name)
	}
	st, err := c.settings.store.ToolSettingUpdate(ctx, ToolSetting{
		Server: t.srv.cfg.Name, Tool: t.remote.Name,
		Enabled: ch.Enabled, Effect: ch.Effect, RequiresApproval: ch.RequiresApproval,
		UpdatedBy: by, UpdatedAt: time.Now(),
	})
	if err != nil {
		return ToolInfo{}, fmt.Errorf("catalogue: storing the setting of tool %q: %w", name, err)
	}
	c.settings.put(st)
	v := c.snapshot(t)
	attrs := []any{"tool", t.remote.Name, "by", by, "enabled", v.enabled, "effect", v.effect, "requires_approval", v.approval}
	t.srv.logger.Info("catalogue: an operator changed a tool's settings", attrs...)
	if ch.Effect == agent.EffectReadOnly && annotatedWrite(t.remote) {
		t.srv.logger.Warn("catalogue: an operator classifies a tool as read_only, but the server says it writes; keeping the operator's classification",
			"tool", t.remote.Name, "by", by)
	}
	return v.info(), nil
}

// info describes a snapshot.
func (t *Tool) info() ToolInfo {
	info := ToolInfo{Name: t.name, Server: t.srv.cfg.Name, Tool: t.remote.Name, Description: t.spec.Description,
		Enabled: t.enabled, Effect: t.effect, EffectSource: t.source, RequiresApproval: t.approval}
	if t.setting != nil {
		info.UpdatedBy, info.UpdatedAt = t.setting.UpdatedBy, t.setting.UpdatedAt
	}
	return info
}

// server returns the configured server called name.
// Server returns the configuration of the server called name, or an error
// matching [ErrUnknownServer].
func (c *Catalogue) Server(name string) (Server, error) {
	s, err := c.server(name)
	if err != nil {
		return Server{}, err
	}
	return cloneServer(s.cfg), nil
}

func (c *Catalogue) server(name string) (*server, error) {
	for _, s := range c.servers {
		if s.cfg.Name == name {
			return s, nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownServer, name)
}

// find returns the imported tool offered as name, whether or not every
// server has imported.
func (c *Catalogue) find(name string) *Tool {
	for _, s := range c.servers {
		if !s.cfg.IsEnabled() {
			continue
		}
		for _, t := range s.imported() {
			if t.name == name {
				return t
			}
		}
	}
	return nil
}

// commit makes tools the imported tools of s, unless one would share its
// local name with another server's tool, and indexes them if every enabled
// server has imported.
func (c *Catalogue) commit(s *server, tools []*Tool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	others := map[string]*Tool{}
	for _, o := range c.servers {
		if o != s && o.cfg.IsEnabled() {
			for _, t := range o.imported() {
				others[t.name] = t
			}
		}
	}
	for _, t := range tools {
		if other, ok := others[t.name]; ok {
			a, b := remoteRef{other.srv.cfg.Name, other.remote.Name}, remoteRef{s.cfg.Name, t.remote.Name}
			if slices.Index(c.servers, other.srv) > slices.Index(c.servers, s) {
				a, b = b, a
			}
			return &nameCollisionError{local: t.name, a: a, b: b}
		}
	}
	s.mu.Lock()
	s.tools = tools
	s.mu.Unlock()
	c.changedLocked()
	return nil
}

// redactURL returns raw without user information, query or fragment.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}

// serverSecrets are the parts of s's configuration an error must not
// repeat: header and environment values, the URL's user information and
// query. Longest first, so a secret that holds another is removed whole.
func serverSecrets(s *Server) []string {
	var out []string
	add := func(v string) {
		if len(v) >= 4 {
			out = append(out, v)
		}
	}
	for _, v := range s.Headers {
		add(v)
	}
	for _, v := range s.Env {
		add(v)
	}
	if u, err := url.Parse(s.URL); err == nil {
		if u.User != nil {
			add(u.User.String())
		}
		add(u.RawQuery)
		for _, vs := range u.Query() {
			for _, v := range vs {
				add(v)
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return out
}

// scrub replaces every secret in msg.
func scrub(msg string, secrets []string) string {
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, s, "[redacted]")
	}
	return msg
}
