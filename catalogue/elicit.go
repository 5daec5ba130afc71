package catalogue

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/mcp"
)

// A server's questions to the operator (MCP elicitation). With
// [Options].Elicitation, every server's client declares the elicitation
// capability, and a question a server asks during a tool call goes to the
// operator of the run that made the call (agent.Ask): the run waits for
// input, the console and "andon answer" reply, and the reply goes back to
// the server — accept with the values, decline, or cancel when the run is
// cancelled or the call's budget passes first.
//
// Which call a question belongs to: on 2026-07-28 it comes inside the
// call's own input_required result, so the call's context says. On the
// handshake-era revisions it is a request of the server's on the
// connection, which does not say which call it is for: it is put to the run
// whose call is in flight on the server, if exactly one run has one, and
// declined (and logged) otherwise — a question is never put to the
// operator of a run it may not be about.

// elicitResult is the client's answer to elicitation/create.
type elicitResult struct {
	Action  string          `json:"action"`
	Content json.RawMessage `json:"content,omitempty"`
}

// elicit answers an elicitation/create of the server: ctx is the call's
// context on 2026-07-28, the request's own on handshake-era revisions.
func (s *server) elicit(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		Mode            string          `json:"mode"`
		Message         string          `json:"message"`
		RequestedSchema json.RawMessage `json:"requestedSchema"`
		URL             string          `json:"url"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &mcp.RPCError{Code: mcp.CodeInvalidParams, Message: "elicitation/create: params are not an object"}
	}
	mode := agent.InputForm
	switch p.Mode {
	case "", "form":
	case "url":
		mode = agent.InputURL
		if p.URL == "" {
			return nil, &mcp.RPCError{Code: mcp.CodeInvalidParams, Message: "elicitation/create: a url elicitation needs a url"}
		}
	default:
		return nil, &mcp.RPCError{Code: mcp.CodeInvalidParams, Message: "elicitation/create: unknown mode"}
	}
	waitCtx := ctx
	if !agent.CanAsk(ctx) {
		call := s.calls.only(agent.CanAsk)
		if call == nil {
			s.logger.Warn("catalogue: declining a server's question: no single run has a call in flight on the server to ask the operator of")
			return elicitResult{Action: agent.ActionDecline}, nil
		}
		// The call's values (its run, its operator) and its ends (the
		// run's cancel, the call's budget), and the request's own end
		// (the server withdrew it, the client closed).
		var cancel context.CancelCauseFunc
		waitCtx, cancel = context.WithCancelCause(call)
		defer cancel(nil)
		defer context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })()
	}
	ans, err := agent.Ask(waitCtx, &agent.Question{Server: s.cfg.Name, Mode: mode, Message: p.Message, Schema: p.RequestedSchema, URL: p.URL})
	if err != nil {
		s.logger.Warn("catalogue: declining a server's question: it could not be put to the operator", "error", err)
		return elicitResult{Action: agent.ActionDecline}, nil
	}
	s.logger.Info("catalogue: a server's question was replied", "action", ans.Action, "run", agent.RunIDFrom(waitCtx))
	return elicitResult{Action: ans.Action, Content: ans.Content}, nil
}

// inflight is the tool calls in flight on one server: their contexts, for
// a handshake-era question to find the run it belongs to.
type inflight struct {
	mu    sync.Mutex
	calls map[*context.Context]struct{}
}

// add records a call in flight under ctx until the returned func is called.
func (f *inflight) add(ctx context.Context) (done func()) {
	key := &ctx
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[*context.Context]struct{}{}
	}
	f.calls[key] = struct{}{}
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		delete(f.calls, key)
		f.mu.Unlock()
	}
}

// only returns the context of a call in flight for which ok holds, if
// every such call is of one run; nil otherwise.
func (f *inflight) only(ok func(context.Context) bool) context.Context {
	f.mu.Lock()
	defer f.mu.Unlock()
	var found context.Context
	run := ""
	for key := range f.calls {
		ctx := *key
		if !ok(ctx) || ctx.Err() != nil {
			continue
		}
		id := agent.RunIDFrom(ctx)
		switch {
		case found == nil:
			found, run = ctx, id
		case id != run || id == "":
			return nil // two runs: whose question is it?
		}
	}
	return found
}
