package catalogue

import (
	"context"
	"fmt"
	"time"
)

// Defaults of a [Budget].
const (
	// DefaultTimeout is a tool call's budget when andon.yaml sets none: the
	// reconnection, the handshake and the call itself, all in.
	DefaultTimeout = 60 * time.Second
	// DefaultMaxTimeout is the ceiling of a call whose progress resets its
	// timeout, when andon.yaml sets none (or the timeout, if longer).
	DefaultMaxTimeout = 10 * time.Minute
)

// Budget bounds one operation on a server: a tool call, or an import of the
// server's tools. In andon.yaml it is set per server and may be overridden
// per tool (see [Server].Tools); a field that is not set (zero, or nil)
// keeps the server's value, or the default.
//
//	servers:
//	  - name: reports
//	    url: https://reports.example.com/mcp
//	    timeout: 30s          # every leg of one call: reconnect, handshake, the call
//	    connect_timeout: 10s  # of which (re)connecting may take at most this
//	    tools:
//	      build_report: {timeout: 2m, progress_resets_timeout: true, max_timeout: 30m}
//
// The catalogue turns a budget into one deadline per operation, set when
// the operation starts, so a server that never answers costs its caller
// the budget and nobody else anything.
type Budget struct {
	// Timeout is the whole budget of one operation, every leg included:
	// waiting for another call's reconnection, (re)connecting with its
	// handshake, and the request. Zero means DefaultTimeout.
	Timeout time.Duration `yaml:"timeout,omitempty"`
	// ConnectTimeout bounds the (re)connection an operation needs, within
	// Timeout. Zero means Timeout alone bounds it (and the MCP client's
	// own bounds on each handshake leg).
	ConnectTimeout time.Duration `yaml:"connect_timeout,omitempty"`
	// ProgressResetsTimeout restarts Timeout whenever the server reports
	// progress on the call; MaxTimeout then bounds the whole operation.
	// Nil means false.
	ProgressResetsTimeout *bool `yaml:"progress_resets_timeout,omitempty"`
	// MaxTimeout is the ceiling of an operation whose progress keeps
	// resetting Timeout. It needs ProgressResetsTimeout. Zero means
	// DefaultMaxTimeout, or Timeout if that is longer.
	MaxTimeout time.Duration `yaml:"max_timeout,omitempty"`
}

// ToolConfig is how andon treats one tool of a server, by its name on the
// server: in andon.yaml, an entry of the server's tools map.
type ToolConfig struct {
	// Budget overrides the server's budget for the tool's calls, field
	// by field.
	Budget `yaml:",inline"`
}

// over returns b with every field that o sets replaced by o's.
func (b Budget) over(o Budget) Budget {
	if o.Timeout != 0 {
		b.Timeout = o.Timeout
	}
	if o.ConnectTimeout != 0 {
		b.ConnectTimeout = o.ConnectTimeout
	}
	if o.ProgressResetsTimeout != nil {
		b.ProgressResetsTimeout = o.ProgressResetsTimeout
	}
	if o.MaxTimeout != 0 {
		b.MaxTimeout = o.MaxTimeout
	}
	return b
}

// resolved returns b with the defaults filled in: Timeout set, MaxTimeout
// set if progress resets the timeout and zero otherwise,
// ProgressResetsTimeout not nil.
func (b Budget) resolved() Budget {
	if b.Timeout <= 0 {
		b.Timeout = DefaultTimeout
	}
	resets := b.ProgressResetsTimeout != nil && *b.ProgressResetsTimeout
	b.ProgressResetsTimeout = &resets
	switch {
	case !resets:
		b.MaxTimeout = 0
	case b.MaxTimeout <= 0:
		b.MaxTimeout = max(DefaultMaxTimeout, b.Timeout)
	}
	return b
}

// problems reports what is wrong with b as set at one level (server or
// tool), and with eff, the budget that applies there once resolved.
func (b Budget) problems(eff Budget) []string {
	var out []string
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"timeout", b.Timeout}, {"connect_timeout", b.ConnectTimeout}, {"max_timeout", b.MaxTimeout}} {
		if d.v < 0 {
			out = append(out, fmt.Sprintf("%s %v is negative", d.name, d.v))
		}
	}
	if len(out) > 0 {
		return out
	}
	resets := eff.ProgressResetsTimeout != nil && *eff.ProgressResetsTimeout
	timeout := eff.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	if b.MaxTimeout > 0 && !resets {
		out = append(out, "max_timeout is the ceiling of a timeout that progress resets: set progress_resets_timeout: true, or drop max_timeout")
	}
	if eff.MaxTimeout > 0 && resets && eff.MaxTimeout < timeout {
		out = append(out, fmt.Sprintf("max_timeout %v is shorter than timeout %v", eff.MaxTimeout, timeout))
	}
	if eff.ConnectTimeout > timeout {
		out = append(out, fmt.Sprintf("connect_timeout %v is longer than timeout %v, which bounds connecting too", eff.ConnectTimeout, timeout))
	}
	return out
}

// ToolBudget is the budget of calls of the tool called tool on s (its name
// on the server), with the defaults filled in: the tool's entry in Tools
// over the server's budget. ProgressResetsTimeout is never nil in it.
func (s *Server) ToolBudget(tool string) Budget {
	b := s.Budget
	if tc, ok := s.Tools[tool]; ok {
		b = b.over(tc.Budget)
	}
	return b.resolved()
}

// importBudget is the budget of an import of s's tools: the server's own,
// without any tool's override.
func (s *Server) importBudget() Budget { return s.Budget.resolved() }

// total is how long an operation under b may take in all: MaxTimeout when
// progress resets the timeout, else Timeout.
func (b Budget) total() time.Duration {
	if b.MaxTimeout > 0 {
		return b.MaxTimeout
	}
	return b.Timeout
}

// connectBound is how long the (re)connection of an operation under b may
// take: ConnectTimeout, else Timeout (a handshake reports no progress, so
// it never earns MaxTimeout).
func (b Budget) connectBound() time.Duration {
	if b.ConnectTimeout > 0 {
		return min(b.ConnectTimeout, b.Timeout)
	}
	return b.Timeout
}

// budgetExpired is the cause of an operation's context when one of its
// bounds passes: it names the bound, the server and, for a call, the tool.
type budgetExpired struct {
	server, tool string // tool is empty for an import
	bound        string // "timeout", "max_timeout" or "connect_timeout"
	limit        time.Duration
}

func (e *budgetExpired) Error() string {
	if e.tool == "" {
		return fmt.Sprintf("catalogue: server %q: importing tools: its %s of %v passed", e.server, e.bound, e.limit)
	}
	return fmt.Sprintf("catalogue: server %q: tool %q: its %s of %v passed", e.server, e.tool, e.bound, e.limit)
}

// Is makes a passed budget match [context.DeadlineExceeded], as the
// deadline it is the cause of.
func (e *budgetExpired) Is(target error) bool { return target == context.DeadlineExceeded }

// withBudget returns ctx bounded by the whole of b, with a cause naming the
// bound, for one operation on server (of tool, if not empty).
func withBudget(ctx context.Context, b Budget, server, tool string) (context.Context, context.CancelFunc) {
	bound := "timeout"
	if b.MaxTimeout > 0 {
		bound = "max_timeout"
	}
	return context.WithTimeoutCause(ctx, b.total(), &budgetExpired{server: server, tool: tool, bound: bound, limit: b.total()})
}

// withConnectBound returns ctx bounded, for (re)connecting, by b's
// connectBound, with a cause naming it.
func withConnectBound(ctx context.Context, b Budget, server, tool string) (context.Context, context.CancelFunc) {
	bound := "timeout"
	if b.ConnectTimeout > 0 && b.ConnectTimeout < b.Timeout {
		bound = "connect_timeout"
	}
	return context.WithTimeoutCause(ctx, b.connectBound(), &budgetExpired{server: server, tool: tool, bound: bound, limit: b.connectBound()})
}
