package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/token"
)

// anyone is the minimum role of a route open without a token: health,
// readiness, the OpenAPI document, the console's static files.
const anyone token.Role = ""

// touchEvery is how stale a token's LastUsedAt may get before a request
// updates it: a write per minute per token, not one per request.
const touchEvery = time.Minute

// principal is who a request acts as.
type principal struct {
	actor agent.Actor
	role  token.Role
	token *token.Token // nil without a token store
}

// describe names the principal for an audit row, never the secret; reason
// is why a request without a principal was refused.
func (p *principal) describe(reason string) string {
	switch {
	case p == nil && reason == "no token":
		return "api (no token)"
	case p == nil:
		return "api (bad token)" // sent one, but not a valid one
	case p.token == nil:
		return fmt.Sprintf("api %s (%s)", p.actor.ID, p.role)
	default:
		return fmt.Sprintf("api token %s (%s, %s)", p.token.ID, p.token.Name, p.token.Role)
	}
}

type principalKey struct{}

// ActorFrom returns who a request that reached [Config].MCP acts as: its
// token's name, an admin if its role is admin. The zero Actor if ctx is
// not such a request's.
func ActorFrom(ctx context.Context) agent.Actor {
	if p, ok := ctx.Value(principalKey{}).(*principal); ok {
		return p.actor
	}
	return agent.Actor{}
}

// actor is who r acts as: its token's name, an admin if the token's role is
// admin. Only a route registered with [server.route] has one; elsewhere it
// is the zero Actor, which may act on no run.
func (s *server) actor(r *http.Request) agent.Actor {
	if p, ok := r.Context().Value(principalKey{}).(*principal); ok {
		return p.actor
	}
	return agent.Actor{}
}

// route is a registered route: its pattern and the least role it needs.
type route struct {
	pattern string
	least   token.Role
}

// route registers h for pattern on mux, behind authentication and a check
// that the request's role is at least min (anyone: no token needed). Every
// route of the API is registered this way (or with [server.routeFirst]),
// so that none is left open by mistake and the OpenAPI document can be
// checked against the list.
func (s *server) route(mux *http.ServeMux, pattern string, min token.Role, h http.HandlerFunc) {
	s.routes = append(s.routes, route{pattern, min})
	if min == anyone {
		mux.HandleFunc(pattern, h)
		return
	}
	mux.HandleFunc(pattern, s.authenticated(min, h))
}

// routeFirst is route for a route with a way to serve a request in fewer
// trips to the store: first tries it before anything else, and serves the
// request (true) only where the ordinary way would have served it too,
// with the same answer; otherwise (false, nothing written) the request goes
// the ordinary way, authentication first — so every refusal, and its
// audit row, is the ordinary way's.
func (s *server) routeFirst(mux *http.ServeMux, pattern string, min token.Role,
	first func(w http.ResponseWriter, r *http.Request, least token.Role) bool, h http.HandlerFunc) {
	s.routes = append(s.routes, route{pattern, min})
	ordinary := s.authenticated(min, h)
	mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if !first(w, r, min) {
			ordinary(w, r)
		}
	})
}

// authenticated is h behind authentication and a check that the
// request's role is at least min.
func (s *server) authenticated(min token.Role, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, reason, err := s.authenticate(r)
		if err != nil {
			s.cfg.Logger.Warn("api: reading the token store failed", "error", err)
			writeError(w, http.StatusServiceUnavailable, "unavailable", "the token store cannot be read")
			return
		}
		if reason != "" {
			s.deny(w, r, http.StatusUnauthorized, p, reason, "")
			return
		}
		if !p.role.AtLeast(min) {
			s.deny(w, r, http.StatusForbidden, p, "role "+string(p.role)+" below "+string(min),
				"this needs the role "+string(min)+" or above; your token's is "+string(p.role))
			return
		}
		defer s.touchAlongside(r, p)()
		h(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	}
}

// touchAlongside starts recording p's token's use, if a record is due,
// and returns what waits for it. The token's use is recorded alongside
// the request, not before it: a cancel must not wait for a write that is
// bookkeeping. (Once a minute per token: most requests have nothing to
// record.)
func (s *server) touchAlongside(r *http.Request, p *principal) (wait func()) {
	if !s.touchDue(p) {
		return func() {}
	}
	var touched sync.WaitGroup
	touched.Go(func() { s.touch(context.WithoutCancel(r.Context()), p) })
	return touched.Wait
}

// authenticate finds who r acts as. reason is not empty if r may not be
// served (p is then the token's principal if it named one, for the audit
// row); err is a failure to read the store.
func (s *server) authenticate(r *http.Request) (p *principal, reason string, err error) {
	if s.cfg.Tokens == nil {
		return &s.local, "", nil
	}
	secret, reason := bearerSecret(r)
	if reason != "" {
		return nil, reason, nil
	}
	// Looking the hash up is not a timing oracle: a client controls the
	// secret, not its hash, so how far an index walk gets tells it nothing.
	t, err := s.cfg.Tokens.TokenByHash(r.Context(), token.Hash(secret))
	if errors.Is(err, token.ErrNotFound) {
		return nil, "unknown token", nil
	}
	if err != nil {
		return nil, "", err
	}
	p, reason = principalOf(t)
	return p, reason, nil
}

// bearerSecret is the token r sends; reason is not empty if it sends none
// that could be one.
func bearerSecret(r *http.Request) (secret, reason string) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", "no token"
	}
	scheme, secret, ok := strings.Cut(h, " ")
	secret = strings.TrimSpace(secret)
	if !ok || !strings.EqualFold(scheme, "Bearer") || secret == "" {
		return "", "not a bearer token"
	}
	if !strings.HasPrefix(secret, token.Prefix) {
		return "", "unknown token"
	}
	return secret, ""
}

// principalOf is who a request with token t acts as; reason is not empty
// if t may not be used.
func principalOf(t *token.Token) (p *principal, reason string) {
	p = &principal{actor: agent.Actor{ID: t.Name, Admin: t.Role == token.RoleAdmin}, role: t.Role, token: t}
	if !t.RevokedAt.IsZero() {
		return p, "revoked token"
	}
	return p, ""
}

// touch records that p's token was used, if its record is stale by
// touchEvery. It is bookkeeping: a failure is logged and the request goes
// on; and a request's own work — an operator's cancel — does not wait for
// it (route touches while the handler runs).
func (s *server) touch(ctx context.Context, p *principal) {
	if !s.touchDue(p) {
		return
	}
	if err := s.cfg.Tokens.TokenTouch(ctx, p.token.ID, s.cfg.Now()); err != nil {
		s.cfg.Logger.Warn("api: recording a token's use failed", "token", p.token.ID, "error", err)
	}
}

// touchDue reports whether p's token's record of its last use is stale by
// touchEvery.
func (s *server) touchDue(p *principal) bool {
	return p != nil && p.token != nil && s.cfg.Now().Sub(p.token.LastUsedAt) >= touchEvery
}

// denial is the message a client gets for a fixed reason.
func denial(reason string) string {
	switch reason {
	case "no token":
		return "this needs an API token: send Authorization: Bearer TOKEN"
	case "not a bearer token":
		return "the Authorization header must be: Bearer TOKEN"
	case "unknown token":
		return "the API token is not valid"
	case "revoked token":
		return "the API token was revoked"
	case "not the run's owner":
		return "you may not do that to this run: it is not yours, and only an admin may act on others' runs"
	default:
		return "you may not do that"
	}
}

// deny answers a refused request with 401 (unauthenticated) or 403
// (forbidden), counts it in andon_api_denied_total and records it in the
// audit log, coalesced by cause (see [denials]): who (the token's id, name
// and role, never its secret), what (method and path, without the query,
// capped), and why (reason, a fixed literal). msg, if not empty, is what
// the client is told; otherwise the message of the reason.
func (s *server) deny(w http.ResponseWriter, r *http.Request, status int, p *principal, reason, msg string) {
	s.cfg.Metrics.Denied(status, reason)
	entry := audit.Entry{Action: audit.ActionAPIDenied, Purpose: p.describe(reason), Method: r.Method,
		Path: capPath(r.URL.EscapedPath()), Status: status, Reason: reason}
	// {id} names a run only under /v1/runs/, and only a run's id is
	// recorded as one.
	if id := r.PathValue("id"); strings.Contains(r.Pattern, " /v1/runs/{id}") && runIDLike(id) {
		entry.RunID = id
	}
	cause := denialCause{pattern: r.Pattern, status: status, reason: reason}
	switch {
	case p == nil:
		// Anyone: one cause whatever the token or the run, so that
		// varying them buys a client no rows.
	case p.token != nil:
		cause.who, cause.run = "token "+p.token.ID, entry.RunID
	default:
		cause.who, cause.run = "actor "+p.actor.ID, entry.RunID
	}
	s.denials.record(r.Context(), cause, entry)
	if msg == "" {
		msg = denial(reason)
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="andon"`)
		writeError(w, status, "unauthenticated", msg)
		return
	}
	writeError(w, status, "forbidden", msg)
}

// capPath is a refused request's path as a row keeps it: escaped (no
// control character reaches a terminal that prints the log) and at most
// maxDeniedPath bytes, marked where it was cut.
func capPath(p string) string {
	if len(p) <= maxDeniedPath {
		return p
	}
	return p[:maxDeniedPath-len("...")] + "..."
}

// runIDLike reports whether id has the shape of a run's id ("run_" and
// letters or digits, 64 bytes at most): anything else in a path is not
// recorded as the run of an audit row.
func runIDLike(id string) bool {
	rest, ok := strings.CutPrefix(id, "run_")
	if !ok || rest == "" || len(id) > 64 {
		return false
	}
	for _, c := range rest {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// failRun is fail for an action on a run: a refusal by the runtime (not the
// run's owner) is denied and audited like any other.
func (s *server) failRun(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, agent.ErrForbidden) {
		p, _ := r.Context().Value(principalKey{}).(*principal)
		s.deny(w, r, http.StatusForbidden, p, "not the run's owner", "")
		return
	}
	s.fail(w, err)
}
