package catalogue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/egress"
	"github.com/andonhq/andon/mcp"
)

// Tool is a tool of an MCP server, offered to models under its local name.
// It implements [agent.Tool].
//
// A Tool from [Catalogue.List] or [Catalogue.Lookup] is a snapshot: it
// carries the operators' settings as they were when it was looked up, so a
// call already under way keeps the effect and approval it started with,
// and the next lookup sees a change.
type Tool struct {
	srv    *server
	name   string // local
	remote mcp.Tool
	spec   agent.ToolSpec

	// cfgEffect and cfgSource are the effect andon.yaml and the server
	// decide (EffectOf), before any operator setting.
	cfgEffect agent.Effect
	cfgSource EffectSource

	// The snapshot: the operator's setting applied. Zero in the imported
	// tools themselves, which are never handed out.
	enabled  bool
	effect   agent.Effect
	source   EffectSource
	approval bool
	setting  *ToolSetting // the operator's, if any

	// budget bounds each call: andon.yaml's, resolved (Server.ToolBudget).
	budget Budget
	// identity is [Tool.Identity]'s, computed once.
	identity string

	// unavailable, if set, is why the tool's server could not be imported:
	// the tool is a name the model asked for, and its Call sends nothing.
	// retryAt is when the server may be tried again.
	unavailable error
	retryAt     time.Time
}

var (
	_ agent.FourEyesTool   = (*Tool)(nil)
	_ agent.IdentifiedTool = (*Tool)(nil)
)

func newTool(s *server, name string, rt mcp.Tool) *Tool {
	effect, source := EffectOf(&s.cfg, rt)
	if source == "operator" && effect == agent.EffectReadOnly && annotatedWrite(rt) {
		s.logger.Warn("catalogue: the operator classifies a tool as read_only, but the server says it writes; keeping the operator's classification",
			"tool", rt.Name)
	}
	desc := rt.Description
	if desc == "" {
		desc = rt.Title
	}
	if desc == "" {
		desc = fmt.Sprintf("Tool %q of MCP server %q.", rt.Name, s.cfg.Name)
	}
	schema := rt.InputSchema
	if len(schema) == 0 || string(schema) == "null" {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	src := SourceDefault
	switch source {
	case "operator":
		src = SourceConfig // andon.yaml's effects: the operator's file
	case "annotations":
		src = SourceAnnotation
	}
	return &Tool{
		srv:       s,
		name:      name,
		remote:    rt,
		cfgEffect: effect,
		cfgSource: src,
		spec:      agent.ToolSpec{Name: name, Description: desc, InputSchema: schema},
		budget:    s.cfg.ToolBudget(rt.Name),
		identity:  identity(&s.cfg, rt.Name, rt.InputSchema),
	}
}

// unavailableTool is the tool called name of server s, which failed to
// import with err and may be tried again from retryAt: a tool whose Call
// fails, saying so, and sends nothing.
func unavailableTool(s *server, name string, err error, retryAt time.Time) *Tool {
	remote := strings.TrimPrefix(name, LocalName(s.cfg.Name, ""))
	return &Tool{
		srv:         s,
		name:        name,
		remote:      mcp.Tool{Name: remote},
		identity:    identity(&s.cfg, remote, nil),
		spec:        agent.ToolSpec{Name: name, Description: fmt.Sprintf("A tool of MCP server %q, which is unavailable.", s.cfg.Name), InputSchema: json.RawMessage(`{"type":"object"}`)},
		enabled:     true,
		effect:      agent.EffectReadOnly, // it sends nothing
		source:      SourceDefault,
		unavailable: err,
		retryAt:     retryAt,
	}
}

// annotatedWrite reports whether the server's annotations say the tool
// changes the world.
func annotatedWrite(rt mcp.Tool) bool {
	a := rt.Annotations
	return a != nil && (a.ReadOnlyHint != nil && !*a.ReadOnlyHint || a.DestructiveHint != nil && *a.DestructiveHint)
}

// with returns a snapshot of t with the operator's setting st (if ok)
// applied over andon.yaml's.
func (t *Tool) with(st ToolSetting, ok bool) *Tool {
	v := *t
	v.enabled, v.effect, v.source, v.approval = true, t.cfgEffect, t.cfgSource, t.srv.cfg.ApprovalRequired()
	if !ok {
		return &v
	}
	if st.Enabled != nil {
		v.enabled = *st.Enabled
	}
	if st.Effect != "" {
		v.effect, v.source = st.Effect, SourceOperator
	}
	if st.RequiresApproval != nil {
		v.approval = *st.RequiresApproval
	}
	v.setting = &st
	return &v
}

// Spec describes the tool to the model, under its local name.
func (t *Tool) Spec() agent.ToolSpec { return t.spec }

// Effect is the tool's effect: an operator's setting, else [EffectOf]. A
// disabled or unavailable tool's is read_only: its Call sends nothing.
func (t *Tool) Effect() agent.Effect {
	if !t.enabled {
		return agent.EffectReadOnly
	}
	return t.effect
}

// RequiresApproval is an operator's setting, else the server's
// [Server.ApprovalRequired]. A disabled or unavailable tool needs no
// approval: its Call sends nothing.
func (t *Tool) RequiresApproval() bool { return t.enabled && t.approval }

// ApprovalOtherPerson, as a [Server]'s Approval, is four eyes: the run's
// owner may not approve a call of the server's tools; an admin still may,
// and the audit log records that as an override.
const ApprovalOtherPerson = "other_person"

// FourEyes reports whether a call needs someone other than the run's
// owner to approve it: the server says approval: other_person and the
// call needs approval at all. It makes Tool an [agent.FourEyesTool].
func (t *Tool) FourEyes() bool {
	return t.RequiresApproval() && t.srv.cfg.Approval == ApprovalOtherPerson
}

// Enabled reports whether the tool is offered: false once an operator has
// disabled it.
func (t *Tool) Enabled() bool { return t.enabled }

// Server returns the name of the tool's server.
func (t *Tool) Server() string { return t.srv.cfg.Name }

// Remote returns the tool as its server describes it.
func (t *Tool) Remote() mcp.Tool { return t.remote }

// Budget returns the budget of the tool's calls, with the defaults filled
// in (see [Server.ToolBudget]).
func (t *Tool) Budget() Budget { return t.budget }

// Unavailable returns why the tool's server could not be imported, for a
// tool that stands for a name the model asked for on such a server; nil
// for a tool the server offered.
func (t *Tool) Unavailable() error { return t.unavailable }

// Call calls the tool on its server with args (a JSON object, or empty for
// none), under ctx: cancelling ctx abandons the call on the wire.
//
// The call has one deadline, set when it starts: the tool's budget
// ([Tool.Budget]: timeout, or max_timeout when progress resets the
// timeout), which covers every leg — waiting for another call's
// reconnection, (re)connecting and its handshake (within connect_timeout),
// and the call. ctx's own deadline wins when it is sooner.
//
//   - The server answers: [agent.OutcomeOK] with the result's text (its
//     structured content, as JSON, if it has no text), or
//     [agent.OutcomeError] if the tool reports a failure (isError).
//   - ctx is cancelled, before or during the call: a result with
//     [agent.OutcomeCancelled] and no error. The server did nothing wrong.
//   - A deadline passes (the budget's, ctx's): a result with
//     [agent.OutcomeFailed] that says the call timed out, in which leg
//     (initialize, tools/call...) and, for the budget, which bound.
//   - args are not a JSON object: [agent.OutcomeError], saying so, and
//     nothing is sent.
//   - An operator has disabled the tool, or its server could not be
//     imported: [agent.OutcomeFailed], saying so, and nothing is sent.
//   - Anything else (the server is unreachable, refuses the request, or
//     breaks the protocol; the connection failed during the call): an
//     error. A call whose connection failed after it may have been sent is
//     not retried; the next call reconnects.
//
// Text longer than [Options].MaxResultBytes is cut, with a note.
func (t *Tool) Call(ctx context.Context, args json.RawMessage) (*agent.ToolResult, error) {
	if !t.enabled { // nothing is called: not reported either
		return &agent.ToolResult{Outcome: agent.OutcomeFailed,
			Text: fmt.Sprintf("Tool %q of server %q is disabled by an operator; it was not called.", t.remote.Name, t.srv.cfg.Name)}, nil
	}
	if t.unavailable != nil { // nothing is called: not reported either
		return &agent.ToolResult{Outcome: agent.OutcomeFailed, Text: t.unavailableText()}, nil
	}
	if t.srv.cat.opts.OnCall != nil || t.srv.cat.opts.Audit != nil {
		return t.reported(ctx, args)
	}
	return t.call(ctx, args)
}

// call is Call, unreported.
func (t *Tool) call(ctx context.Context, args json.RawMessage) (*agent.ToolResult, error) {
	var a any
	if len(args) > 0 && string(args) != "null" {
		if !json.Valid(args) || firstNonSpace(args) != '{' {
			return &agent.ToolResult{Outcome: agent.OutcomeError,
				Text: fmt.Sprintf("The arguments of tool %q must be a JSON object.", t.name)}, nil
		}
		a = args
	}
	if id := agent.RunIDFrom(ctx); id != "" {
		// What the call sends out over HTTP is audited under its run.
		ctx = egress.WithRun(ctx, id)
	}
	// One deadline for the whole operation, set now: the reconnection and
	// the handshake spend the same budget as the call.
	b := t.budget
	bctx, cancel := withBudget(ctx, b, t.srv.cfg.Name, t.remote.Name)
	defer cancel()
	c, err := t.srv.client(bctx, b, t.remote.Name)
	if err != nil {
		return t.failure(ctx, t.budgetPassed(ctx, bctx, err))
	}
	defer t.srv.calls.add(bctx)() // for a question the server asks meanwhile
	opts := &mcp.CallOptions{
		Timeout:                b.Timeout,
		ResetTimeoutOnProgress: *b.ProgressResetsTimeout,
		MaxTotalTimeout:        b.MaxTimeout,
		OnCancelOutcome:        t.cancelOutcome(ctx, args),
	}
	t.taskOptions(ctx, c.client, opts) // task.go: the runtime keeps the call's task, if it becomes one
	res, err := c.client.CallTool(bctx, t.remote.Name, a, opts)
	if te := (*mcp.TaskError)(nil); err != nil && errors.As(err, &te) && ctx.Err() == nil {
		return t.taskFailure(ctx, bctx, c, nil, err) // the server says the task failed, or was cancelled
	}
	if err != nil {
		if errors.Is(err, mcp.ErrClosed) {
			// The connection is gone. This call may have reached the
			// server: it is not retried. The next call reconnects.
			t.srv.drop(c)
		}
		if unknownTool(err) { // the server's tools changed: see listchanged.go
			t.srv.refresh("unknown_tool")
		}
		return t.failure(ctx, t.budgetPassed(ctx, bctx, &legError{leg: "tools/call", err: needsLogin(t.srv.cfg.Name, err)}))
	}
	return t.result(ctx, res), nil
}

// failure turns an error of a call made under ctx (the caller's) into its
// outcome: an interrupted call is a result, anything else an error.
func (t *Tool) failure(ctx context.Context, err error) (*agent.ToolResult, error) {
	cancelled := errors.Is(err, mcp.ErrCancelled)
	timedOut := errors.Is(err, mcp.ErrTimeout) || errors.Is(err, context.DeadlineExceeded)
	if ctxErr := ctx.Err(); ctxErr != nil {
		// The caller's context decides, whatever step the call was at
		// (waiting for a reconnection, in the handshake, on the wire).
		cancelled = errors.Is(ctxErr, context.Canceled)
		timedOut = !cancelled
	}
	switch {
	case cancelled:
		return &agent.ToolResult{Outcome: agent.OutcomeCancelled,
			Text: fmt.Sprintf("The call to tool %q on server %q was cancelled.", t.remote.Name, t.srv.cfg.Name)}, nil
	case timedOut:
		return &agent.ToolResult{Outcome: agent.OutcomeFailed, Text: t.timedOutText(err)}, nil
	}
	if errors.Is(err, ErrClosed) {
		return nil, err
	}
	if errors.Is(err, ErrNeedsLogin) {
		return &agent.ToolResult{Outcome: agent.OutcomeFailed, Text: needsLoginText(t.srv.cfg.Name, t.name)}, nil
	}
	return nil, fmt.Errorf("catalogue: calling tool %q on server %q: %w", t.remote.Name, t.srv.cfg.Name, err)
}

// budgetPassed returns err, a call's error, saying which bound of the
// budget passed if it timed out while the caller's context had not ended:
// either the budget's deadline, or the client's timer for the call's
// Timeout, which is the same bound (or, when progress resets it, the
// timeout that passed without progress) and may fire a moment sooner.
//
// bctx is the operation's context, bounded by the whole budget: once its
// deadline has passed, a timer of the client's that fired (MaxTotalTimeout
// is the same bound, started a moment later) is the whole budget too.
func (t *Tool) budgetPassed(ctx, bctx context.Context, err error) error {
	be := (*budgetExpired)(nil)
	if ctx.Err() != nil || errors.As(err, &be) || !errors.Is(err, mcp.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	be = &budgetExpired{server: t.srv.cfg.Name, tool: t.remote.Name, bound: "timeout", limit: t.budget.Timeout}
	if d, ok := bctx.Deadline(); ok && t.budget.MaxTimeout > 0 && !time.Now().Before(d) {
		be.bound, be.limit = "max_timeout", t.budget.MaxTimeout
	}
	return &legError{leg: legOf(err), err: fmt.Errorf("%w (%w)", err, be)}
}

// timedOutText says that the call timed out, in which leg, and which bound
// of the budget passed, if it was the budget. It is the only failed result
// whose text [timedOut] knows.
func (t *Tool) timedOutText(err error) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The call to tool %q on server %q%s", t.remote.Name, t.srv.cfg.Name, timedOutWords)
	if leg := legOf(err); leg != "" {
		b.WriteString(" during " + leg)
	}
	if be := (*budgetExpired)(nil); errors.As(err, &be) {
		fmt.Fprintf(&b, ": its %s of %v passed", be.bound, be.limit)
	}
	b.WriteString(".")
	return b.String()
}

// timedOutWords follow the tool and server in timedOutText.
const timedOutWords = " timed out"

// timedOut reports whether res is the result of a call that timed out
// (timedOutText's), rather than one that failed otherwise.
func (t *Tool) timedOut(res *agent.ToolResult) bool {
	return res.Outcome == agent.OutcomeFailed &&
		strings.HasPrefix(res.Text, fmt.Sprintf("The call to tool %q on server %q%s", t.remote.Name, t.srv.cfg.Name, timedOutWords))
}

// unavailableText says why an unavailable tool was not called.
func (t *Tool) unavailableText() string {
	if errors.Is(t.unavailable, ErrNeedsLogin) {
		return needsLoginText(t.srv.cfg.Name, t.name)
	}
	why := t.unavailable.Error()
	if ie := (*ImportError)(nil); errors.As(t.unavailable, &ie) {
		why = ie.Summary()
	}
	// What failed comes first: it is what a one-line view keeps.
	text := fmt.Sprintf("Server %q: %s. Tool %q was not called: andon could not import the server's tools.",
		t.srv.cfg.Name, why, t.name)
	if !t.retryAt.IsZero() {
		text += fmt.Sprintf(" It tries the server again from %s.", t.retryAt.UTC().Format(time.TimeOnly+" UTC"))
	}
	return text
}

// needsLoginText says that a call was not made because server needs an
// operator's login.
func needsLoginText(server, tool string) string {
	return fmt.Sprintf("Server %q needs `andon auth login %s` (or Connect in the console): andon holds no OAuth token for it, or its token can no longer be refreshed. Tool %q was not called.",
		server, server, tool)
}

// ResultText is a tool result as a model reads it: its text blocks, one per
// line, with other blocks described in brackets; or, if it has no content,
// its structured content as JSON.
func ResultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c.Type {
		case "text":
			parts = append(parts, c.Text)
		case "image", "audio":
			parts = append(parts, fmt.Sprintf("[%s content, %s, %d bytes of base64]", c.Type, c.MIMEType, len(c.Data)))
		case "resource_link":
			parts = append(parts, fmt.Sprintf("[resource link: %s]", c.URI))
		case "resource":
			var r struct {
				URI  string `json:"uri"`
				Text string `json:"text"`
			}
			if json.Unmarshal(c.Resource, &r) == nil && r.Text != "" {
				parts = append(parts, r.Text)
			} else {
				parts = append(parts, fmt.Sprintf("[resource: %s]", r.URI))
			}
		default:
			parts = append(parts, fmt.Sprintf("[%s content]", c.Type))
		}
	}
	hasText := false
	for _, c := range res.Content {
		hasText = hasText || c.Type == "text"
	}
	if !hasText && len(res.StructuredContent) > 0 && string(res.StructuredContent) != "null" {
		return string(res.StructuredContent)
	}
	return strings.Join(parts, "\n")
}

// truncate cuts s to at most max bytes, on a character boundary, and says
// so.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n\n[andon: the result was cut to its first %d of %d bytes]", cut, len(s))
}

func firstNonSpace(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
		default:
			return c
		}
	}
	return 0
}
