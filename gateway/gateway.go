// Package gateway serves the tools of andon's catalogue to any MCP client,
// so that an agent andon does not drive — a desktop or IDE assistant, a
// coding agent, a program in another language — gets what andon's own runs
// get: each call a recorded call of the runtime ([agent.Runtime.Call]),
// with the tool's budget, the vault's credentials injected upstream and
// never seen downstream, the egress rules, the write fence, approvals, one
// audit row, and the operator's stop button.
//
// A client's cancel, however its revision sends it, reaches the gateway as
// the end of its request's context ([mcp.Server]); the gateway cancels the
// call's run, and the runtime tells the upstream server by the mechanism
// that server's revision needs. An operator who cancels the run (the
// console, andon cancel, the API) stops the call the same way, and the
// client is answered with a result that says an operator stopped it.
package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp"
)

// Options configure a [Gateway]. The zero value works.
type Options struct {
	// Owner names who a request's calls run as (their runs' owner, who
	// may cancel them): the identity the caller's authentication put in
	// ctx, say. Nil, or "", means "gateway".
	Owner func(ctx context.Context, peer *mcp.Peer) string
	// Server configures the MCP server side. Its Implementation defaults
	// to {Name: "andon-gateway"}.
	Server mcp.ServerOptions
	// Logger receives what goes wrong out of a client's sight. Nil means
	// slog.Default().
	Logger *slog.Logger
	// OnCall, if set, is told how each tool call through the gateway
	// ended, by its server's name in andon.yaml: one of the Outcome
	// constants. It must not block.
	OnCall func(server string, outcome Outcome)
}

// Outcome is how a call through the gateway ended, as [Options].OnCall
// is told.
type Outcome string

// The outcomes of a call through the gateway.
const (
	OutcomeOK       Outcome = "ok"       // the server's result, not an error
	OutcomeToolErr  Outcome = "error"    // the server's result, marked isError
	OutcomeClient   Outcome = "client"   // the client cancelled it, or went away
	OutcomeOperator Outcome = "operator" // an operator stopped it
	OutcomeDenied   Outcome = "denied"   // an operator refused it
	OutcomeFailed   Outcome = "failed"   // it could not be made or completed (a budget passed, say)
)

// Gateway is an MCP server fronting a catalogue's servers. Serve it over
// stdio with [Gateway.ServeStream] and over Streamable HTTP as an
// [http.Handler]; [Gateway.Run] forwards the catalogue's list changes.
type Gateway struct {
	*mcp.Server
	cat    *catalogue.Catalogue
	rt     *agent.Runtime
	owner  func(ctx context.Context, peer *mcp.Peer) string
	onCall func(server string, outcome Outcome)
	logger *slog.Logger

	mu             sync.Mutex
	owners         map[string]string // each open session's owner, fixed by its first call
	resourceServer map[string]string // the server of each resource URI, as last listed
}

// New returns a gateway serving cat's tools, each call made by rt (whose
// Tools must be cat, so that a call resolves to the tool listed). A nil
// opts is the zero Options.
func New(cat *catalogue.Catalogue, rt *agent.Runtime, opts *Options) *Gateway {
	g := &Gateway{cat: cat, rt: rt, owners: map[string]string{}}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Server.Implementation == (mcp.Implementation{}) {
		o.Server.Implementation = mcp.Implementation{Name: "andon-gateway", Version: "1"}
	}
	g.owner, g.onCall = o.Owner, o.OnCall
	g.logger = o.Logger
	if g.logger == nil {
		g.logger = slog.Default()
	}
	if o.Server.Logger == nil {
		o.Server.Logger = g.logger
	}
	then := o.Server.OnSessionEnd
	o.Server.OnSessionEnd = func(session string) {
		g.mu.Lock()
		delete(g.owners, session) // its calls ended with it
		g.mu.Unlock()
		if then != nil {
			then(session)
		}
	}
	g.Server = mcp.NewServer(g, &o.Server)
	return g
}

// Run forwards the catalogue's changes of tools to the gateway's clients
// (notifications/tools/list_changed, or on 2026-07-28 their listen
// streams) until ctx ends.
func (g *Gateway) Run(ctx context.Context) {
	for {
		select {
		case <-g.cat.Changed():
			g.NotifyToolsChanged()
		case <-ctx.Done():
			return
		}
	}
}

// ListTools lists the catalogue's enabled tools under the names the
// catalogue gives them (mcp_<server>_<tool>), as their servers describe
// them.
func (g *Gateway) ListTools(ctx context.Context, peer *mcp.Peer) ([]mcp.Tool, error) {
	list, err := g.cat.List(ctx)
	if err != nil {
		g.logger.Warn("gateway: listing the catalogue failed", "session", peer.Session, "error", err)
		return nil, &mcp.RPCError{Code: mcp.CodeInternalError, Message: "andon could not list its servers' tools; see its log"}
	}
	tools := make([]mcp.Tool, 0, len(list))
	for _, t := range list {
		ct, ok := t.(*catalogue.Tool)
		if !ok {
			continue
		}
		remote := ct.Remote()
		tools = append(tools, mcp.Tool{
			Name:         ct.Spec().Name,
			Title:        remote.Title,
			Description:  remote.Description,
			InputSchema:  remote.InputSchema,
			OutputSchema: remote.OutputSchema,
			Annotations:  remote.Annotations,
		})
	}
	return tools, nil
}

// CallTool makes the call as a run of the runtime and answers with the
// upstream server's result as it came. A call that did not complete is
// answered with a result whose IsError is set and whose text says who or
// what stopped it: an operator, an approval denied, its budget, a failure.
func (g *Gateway) CallTool(ctx context.Context, call *mcp.ToolCall) (*mcp.CallToolResult, error) {
	t, err := g.cat.Lookup(ctx, call.Name)
	if err != nil {
		g.logger.Warn("gateway: looking up a tool failed", "tool", call.Name, "error", err)
		return nil, &mcp.RPCError{Code: mcp.CodeInternalError, Message: "andon could not look up the tool; see its log"}
	}
	if t == nil {
		return nil, &mcp.RPCError{Code: mcp.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", call.Name)}
	}
	owner, err := g.sessionOwner(ctx, call.Peer)
	if err != nil {
		return nil, err
	}
	ctx, result := catalogue.WithCallResult(ctx)
	res, err := g.rt.Call(ctx, owner, &agent.DirectCall{Tool: call.Name, Arguments: call.Arguments, Session: call.Peer.Session, Client: call.Peer.Client.Name})
	if err != nil {
		g.logger.Warn("gateway: a call could not be made", "tool", call.Name, "session", call.Peer.Session, "error", err)
		return nil, &mcp.RPCError{Code: mcp.CodeInternalError, Message: "andon could not make the call; see its log"}
	}
	r := result()
	if r == nil || res.Run.Status != agent.StatusCompleted {
		r = stopped(ctx, res)
	}
	if g.onCall != nil {
		g.onCall(t.Server(), outcomeOf(ctx, res, r))
	}
	return r, nil
}

// outcomeOf is how a call ended, for OnCall: r is what the client was
// answered.
func outcomeOf(ctx context.Context, res *agent.CallResult, r *mcp.CallToolResult) Outcome {
	switch {
	case res.Run.Status == agent.StatusCompleted && !r.IsError:
		return OutcomeOK
	case res.Run.Status == agent.StatusCompleted && res.Step != nil && res.Step.Outcome == agent.OutcomeError:
		return OutcomeToolErr
	case res.Run.Status == agent.StatusCancelled && ctx.Err() != nil:
		return OutcomeClient
	case res.Run.Status == agent.StatusCancelled:
		return OutcomeOperator
	case res.Step != nil && res.Step.Outcome == agent.OutcomeDenied:
		return OutcomeDenied
	}
	return OutcomeFailed
}

// sessionOwner is who the calls of peer's session run as: fixed by its
// first call, so that a session cannot be taken over by another identity
// that learns its id.
func (g *Gateway) sessionOwner(ctx context.Context, peer *mcp.Peer) (string, error) {
	owner := ""
	if g.owner != nil {
		owner = g.owner(ctx, peer)
	}
	if owner == "" {
		owner = "gateway"
	}
	if peer.Transport == "http" && peer.ProtocolVersion == mcp.Version20260728 {
		return owner, nil // a stateless request is a session of its own
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	first, ok := g.owners[peer.Session]
	switch {
	case !ok:
		g.owners[peer.Session] = owner
	case first != owner:
		return "", &mcp.RPCError{Code: mcp.CodeInvalidRequest, Message: "this session belongs to another identity"}
	}
	return owner, nil
}

// stopped is the result for a call whose run did not complete with a
// result: it says why, so that the client's model and user can tell an
// operator's stop from a failure.
func stopped(ctx context.Context, res *agent.CallResult) *mcp.CallToolResult {
	run := res.Run
	text := ""
	switch {
	case run.Status == agent.StatusCancelled && ctx.Err() != nil:
		text = "cancelled: the client went away" // no one is waiting to read it
	case run.Status == agent.StatusCancelled:
		text = "stopped by an operator: the call was cancelled in andon, and its server told"
	case res.Step != nil && res.Step.Outcome == agent.OutcomeDenied:
		text = "denied: an operator refused the call"
	case res.Step != nil && res.Step.Text != "":
		text = fmt.Sprintf("%s: %s", res.Step.Outcome, res.Step.Text)
	case run.Error != "":
		text = fmt.Sprintf("%s: %s", run.Reason, run.Error)
	default:
		text = fmt.Sprintf("the call ended %s (%s)", run.Status, run.Reason)
	}
	return &mcp.CallToolResult{
		Content: []mcp.Content{{Type: "text", Text: text + " [andon run " + run.ID + "]"}},
		IsError: true,
	}
}
