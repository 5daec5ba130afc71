package api

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/token"
)

// GatewayCall is what a run made by the gateway was for: one tool call an
// MCP client asked for.
type GatewayCall struct {
	Tool    string `json:"tool"`
	Client  string `json:"client,omitempty"`
	Session string `json:"session,omitempty"`
}

// GatewaySession is a downstream MCP session with calls in flight
// through the gateway: GET /v1/gateway/sessions.
type GatewaySession struct {
	Session string `json:"session"`
	Client  string `json:"client,omitempty"`
	Owner   string `json:"owner"`
	// Calls are its calls not yet ended, oldest first.
	Calls []Run `json:"calls"`
}

// gatewayCall reads a run's request for the gateway's call; nil for a
// run of another kind. Every run a list shows passes here: a request
// without a "call" key is not decoded at all.
func gatewayCall(request json.RawMessage) *GatewayCall {
	if !bytes.Contains(request, []byte(`"call"`)) {
		return nil
	}
	var req struct {
		Call *agent.DirectCall `json:"call"`
	}
	if json.Unmarshal(request, &req) != nil || req.Call == nil {
		return nil
	}
	return &GatewayCall{Tool: req.Call.Tool, Client: req.Call.Client, Session: req.Call.Session}
}

// activeStatuses are the statuses of a call not yet ended.
var activeStatuses = []agent.Status{agent.StatusRunning, agent.StatusWaitingForApproval, agent.StatusWaitingForInput, agent.StatusQueued}

// gatewaySessions are the sessions with calls not yet ended, from the
// runs the store lists (at most maxActiveCalls of each status).
func (s *server) gatewaySessions(r *http.Request) ([]GatewaySession, error) {
	bySession := map[string]*GatewaySession{}
	for _, st := range activeStatuses {
		runs, err := s.cfg.Store.RunList(r.Context(), agent.RunFilter{Status: st, Limit: maxActiveCalls})
		if err != nil {
			return nil, err
		}
		for _, run := range runs {
			out := toRun(run)
			g := out.Gateway
			if g == nil {
				continue
			}
			gs := bySession[g.Session]
			if gs == nil {
				gs = &GatewaySession{Session: g.Session, Client: g.Client, Owner: run.Owner}
				bySession[g.Session] = gs
			}
			gs.Calls = append(gs.Calls, listed(out))
		}
	}
	sessions := make([]GatewaySession, 0, len(bySession))
	for _, gs := range bySession {
		slices.SortFunc(gs.Calls, func(a, b Run) int { return a.CreatedAt.Compare(b.CreatedAt) })
		sessions = append(sessions, *gs)
	}
	slices.SortFunc(sessions, func(a, b GatewaySession) int {
		return cmp.Or(a.Calls[0].CreatedAt.Compare(b.Calls[0].CreatedAt), cmp.Compare(a.Session, b.Session))
	})
	return sessions, nil
}

// maxActiveCalls bounds how many runs of each active status the sessions'
// listing reads.
const maxActiveCalls = 1000

func (s *server) gatewayRoutes(mux *http.ServeMux) {
	s.route(mux, "GET /v1/gateway/sessions", token.RoleViewer, s.listGatewaySessions)
	s.route(mux, "POST /v1/gateway/sessions/{session}/cancel", token.RoleOperator, s.cancelGatewaySession)
}

func (s *server) listGatewaySessions(w http.ResponseWriter, r *http.Request) {
	sessions, err := s.gatewaySessions(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": sessions})
}

// cancelGatewaySession cancels every call of a session not yet ended that
// the request may act on: each upstream server is told, and each client
// answered that an operator stopped its call.
func (s *server) cancelGatewaySession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("session")
	sessions, err := s.gatewaySessions(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	i := slices.IndexFunc(sessions, func(gs GatewaySession) bool { return gs.Session == id })
	if i < 0 {
		writeError(w, http.StatusNotFound, "not_found", "no gateway session with calls in flight has that id")
		return
	}
	actor := s.actor(r)
	cancelled := []string{}
	for _, call := range sessions[i].Calls {
		err := s.cfg.Runtime.Cancel(r.Context(), actor, call.ID)
		switch {
		case err == nil:
			cancelled = append(cancelled, call.ID)
		case errors.Is(err, agent.ErrFinished):
			// ended meanwhile
		case errors.Is(err, agent.ErrForbidden):
			writeError(w, http.StatusForbidden, "forbidden", "the session's calls are not yours to cancel")
			return
		default:
			s.failRun(w, r, err)
			return
		}
	}
	s.events.nudge()
	writeJSON(w, http.StatusOK, map[string]any{"session": id, "cancelled": cancelled})
}
