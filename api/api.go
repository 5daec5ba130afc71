// Package api is andon's HTTP API: start, list, show, cancel, approve and
// deny runs, read the audit log, as JSON over HTTP. `andon serve` serves it
// on loopback, and the other commands use it when a server is up. The whole
// API is described by the OpenAPI 3.1 document it serves at
// GET /v1/openapi.json.
//
// Routes (all JSON), with the least role each needs:
//
//	POST /v1/runs                      operator  start a run   {"prompt", "model", "script"}
//	                                             (script: a script object, or a script file's text)
//	GET  /v1/runs?status=&owner=&limit=&before=
//	                                   viewer    runs, newest first; a full page gives next_before
//	                                             (a request or pending call's args over 4 KiB is left
//	                                             out, flagged request_omitted / args_omitted)
//	GET  /v1/runs/{id}                 viewer    the run (with the call it waits on, if any), its
//	                                             steps, the decisions on its calls, its newest
//	                                             audit rows (a full page gives audit_next_before)
//	POST /v1/runs/{id}/cancel          operator  cancel it     → {"run", "took_ms"}
//	POST /v1/runs/{id}/approve         operator  approve the call it waits on  [{"step", "call", "tool", "args_digest"}]
//	POST /v1/runs/{id}/deny            operator  deny it                       [the same]
//	POST /v1/runs/{id}/answer          operator  answer the question it waits on  {"question", "content"}
//	POST /v1/runs/{id}/decline         operator  decline it                          [{"question"}]
//	GET  /v1/audit?run=&action=&limit=&before=
//	                                   viewer    audit rows, newest first
//	GET  /v1/whoami                    viewer    the token's name and role
//	GET  /v1/servers                   viewer    the MCP servers (with a Catalogue)
//	GET  /v1/tools?server=             viewer    their tools: effect, approval, enabled
//	POST /v1/servers/{name}/import     admin     list a server's tools again
//	PATCH /v1/tools/{name}             admin     {"enabled", "effect", "requires_approval"}
//	GET  /v1/health                    anyone    the process answers
//	GET  /v1/ready                     anyone    … and its store too
//	GET  /v1/openapi.json              anyone    the OpenAPI document
//	GET  /v1/events[?run=ID]           viewer    live run and step changes (text/event-stream)
//	GET  /metrics                      viewer    Prometheus metrics (see [metrics.Metrics])
//	GET  /                             anyone    the operator console (its data comes from the routes above)
//
// # Authentication
//
// A request authenticates with an API token: Authorization: Bearer TOKEN.
// There are no cookies, so a browser never sends a credential on its own:
// cross-site requests cannot act (CSRF) by construction. A token has a name
// (the identity its requests act as: the owner of the runs it starts) and a
// role: viewer reads; operator also starts runs and cancels, approves or
// denies its own; admin does anything to any run. Tokens are made with
// `andon token create`; the store keeps only their SHA-256 (see
// [token.Hash]). A missing, unknown or revoked token gets 401
// unauthenticated; a role too low, or an operator acting on someone else's
// run, 403 forbidden. Both are counted in andon_api_denied_total and
// audited, coalesced by cause (the token, or none; the route; the reason):
// the first refusal of a cause is an api_denied row at once, with the path
// capped and the run's id only if it looks like one; its further refusals
// within [Config].DenialInterval are one api_denied_repeated row with their
// count. A flood of refusals thus costs a bounded number of rows, and no
// secret is ever in one.
//
// With no [Config.Tokens] (an embedded API, tests), every request acts as
// [Config.Actor] without a token.
//
// # Approvals
//
// A run waiting for approval shows the call it waits on as run.pending:
// the tool, its arguments, and the call's name (step, call, tool,
// args_digest; see agent.CallRef). An approve or deny whose body carries
// that name decides only if the run still waits on exactly that call, and
// is a conflict otherwise; without a body it decides on whatever call the
// run waits on. A denied call is not made; the model is told and the run
// goes on. Under four eyes (a server's approval: other_person) the owner's
// approval is forbidden, audited as call_approval_refused rather than
// api_denied; an admin's own is an override, audited as one.
//
// # Errors
//
// Errors are {"error": {"code", "message"}} with a stable code: bad_request,
// unauthenticated, forbidden, not_found, conflict, misdirected (421: a Host
// not on the allow-list, see [Config].AllowedHosts), unavailable,
// bad_gateway, internal. A message speaks of what the client sent (a
// field, a byte offset, a limit); an internal error's detail goes to the
// log only. A list's limit is 1 to 1000; an unknown status, or a before
// that names no run, is a bad request. So is JSON over one of the
// runtime's limits (a run request or an answer nested deeper than
// agent.MaxJSONDepth, or larger than agent.MaxRequestBytes or
// agent.MaxAnswerBytes): the message names the limit. Answers are compact
// JSON, never indented.
package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/metrics"
	"github.com/andonhq/andon/token"
)

// Config configures the API handler.
type Config struct {
	// Runtime runs and cancels runs. Required.
	Runtime *agent.Runtime
	// Store reads runs and steps. Required.
	Store agent.Store
	// Audit, if set, lists the audit rows of runs (GET /v1/audit and a
	// run's detail) and records every denied request. Required with
	// Tokens.
	Audit AuditLog
	// Tokens authenticates requests (see the package doc). Nil means no
	// authentication: every request acts as Actor, with the role admin
	// if Actor.Admin and operator otherwise — for an API embedded in a
	// program or a test; `andon serve` always sets it.
	Tokens token.Store
	// TokenCancel, if set with Tokens, makes an operator's cancel one
	// round trip to the store: the token's check and the cancel in one
	// statement (see cancel_token.go). Nil: the token is read, then the
	// run cancelled.
	TokenCancel TokenCanceller
	// Inputs, if set, shows the question a run waiting for input waits
	// on, in its detail (see input.go). Nil: none is shown.
	Inputs agent.InputStore
	// Catalogue, if set, serves the servers and tools routes: see
	// [Catalogue].
	Catalogue Catalogue
	// Connect, if set, serves the console's Connect for servers with
	// auth: oauth: see [Connect].
	Connect *Connect
	// MCP, if set, is served on /mcp (GET, POST, DELETE: Streamable
	// HTTP) to tokens of the role operator or above: the gateway, which
	// finds who a request acts as with [ActorFrom].
	MCP http.Handler
	// Actor is who every request acts as when Tokens is nil. Zero means
	// {ID: "local", Admin: true}.
	Actor agent.Actor
	// Metrics are the process's metrics, served on GET /metrics with the
	// runs counted from Store, and the API's refusals counted in. Nil
	// means a fresh, empty set.
	Metrics *metrics.Metrics
	// AllowedHosts are the names, besides loopback's (localhost, any
	// 127.0.0.0/8 address, ::1), that a request may reach the API by in
	// its Host header, without a port: the name a reverse proxy passes
	// on, say. A request by any other name is refused (421 misdirected)
	// before any route sees it, so that a web page cannot read the API
	// through a name of its own that resolves to loopback (DNS
	// rebinding). Nil: loopback names only, which is also how an
	// httptest server is reached (a request made with
	// httptest.NewRequest names example.com: set its Host).
	AllowedHosts []string
	// Logger receives request failures. Nil means discard.
	Logger *slog.Logger
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
	// EventInterval is how often the event stream reads the store while
	// a stream is open. Zero means DefaultEventInterval.
	EventInterval time.Duration
	// EventHeartbeat is how often an idle event stream sends a comment.
	// Zero means DefaultEventHeartbeat.
	EventHeartbeat time.Duration
	// EventRecheck is how often an open event stream reads its token
	// again: a stream whose token was revoked, or whose role changed,
	// ends (its client reconnects, and is asked for a valid token). Zero
	// means DefaultEventRecheck.
	EventRecheck time.Duration
	// DenialInterval is how long the refusals of one cause (the same
	// token, or none; route; reason) share one api_denied audit row: the
	// first is recorded at once, the others counted and recorded as one
	// api_denied_repeated row when the interval ends. Zero means
	// DefaultDenialInterval.
	DenialInterval time.Duration
	// Stop, once closed, ends every event stream and writes the counts
	// of refusals still being coalesced (see DenialInterval).
	// http.Server.Shutdown waits for requests to finish, and a stream
	// never does on its own: close Stop from
	// http.Server.RegisterOnShutdown. Nil: streams end only when their
	// clients go away, and counts are written only as their intervals
	// end.
	Stop <-chan struct{}
}

// AuditLog lists audit rows and records the API's own (denied requests);
// *audit.Log implements it.
type AuditLog interface {
	List(ctx context.Context, q audit.Query) ([]audit.Row, error)
	Record(ctx context.Context, e audit.Entry) (audit.Row, error)
}

// NewHandler returns the API's handler.
func NewHandler(cfg Config) (http.Handler, error) {
	if cfg.Runtime == nil || cfg.Store == nil {
		return nil, errors.New("api: Config.Runtime and Config.Store are required")
	}
	if cfg.Tokens != nil && cfg.Audit == nil {
		return nil, errors.New("api: Config.Audit is required with Config.Tokens: denied requests are audited")
	}
	if cfg.Actor.ID == "" {
		cfg.Actor = agent.Actor{ID: "local", Admin: true}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.EventInterval <= 0 {
		cfg.EventInterval = DefaultEventInterval
	}
	if cfg.EventHeartbeat <= 0 {
		cfg.EventHeartbeat = DefaultEventHeartbeat
	}
	if cfg.EventRecheck <= 0 {
		cfg.EventRecheck = DefaultEventRecheck
	}
	if cfg.DenialInterval <= 0 {
		cfg.DenialInterval = DefaultDenialInterval
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New(cfg.Logger)
	}
	allowed, err := newHosts(cfg.AllowedHosts)
	if err != nil {
		return nil, err
	}
	s := &server{cfg: cfg, events: newHub(&cfg), denials: newDenials(&cfg)}
	if cfg.Stop != nil {
		// A server that stops writes the counts of refusals it holds.
		go func() {
			<-cfg.Stop
			s.denials.endAll()
		}()
	}
	s.local = principal{actor: cfg.Actor, role: token.RoleOperator}
	if cfg.Actor.Admin {
		s.local.role = token.RoleAdmin
	}
	mux := http.NewServeMux()
	s.route(mux, "POST /v1/runs", token.RoleOperator, s.createRun)
	s.route(mux, "GET /v1/runs", token.RoleViewer, s.listRuns)
	s.route(mux, "GET /v1/runs/{id}", token.RoleViewer, s.showRun)
	s.routeFirst(mux, "POST /v1/runs/{id}/cancel", token.RoleOperator, s.cancelByToken, s.cancelRun)
	s.route(mux, "POST /v1/runs/{id}/approve", token.RoleOperator, s.decide(true))
	s.route(mux, "POST /v1/runs/{id}/deny", token.RoleOperator, s.decide(false))
	s.inputRoutes(mux) // answer, decline: see input.go
	s.route(mux, "GET /v1/audit", token.RoleViewer, s.listAudit)
	s.route(mux, "GET /v1/whoami", token.RoleViewer, s.whoami)
	s.toolRoutes(mux)
	s.connectRoutes(mux)
	s.routeMetrics(mux) // GET /metrics, role viewer
	s.route(mux, "GET /v1/health", anyone, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.route(mux, "GET /v1/ready", anyone, s.ready)
	s.route(mux, "GET /v1/openapi.json", anyone, serveOpenAPI)
	s.eventRoutes(mux)
	s.gatewayRoutes(mux) // the gateway's sessions: see gateway.go
	s.consoleRoutes(mux)
	if cfg.MCP != nil {
		for _, method := range []string{"GET", "POST", "DELETE"} {
			s.route(mux, method+" /mcp", token.RoleOperator, cfg.MCP.ServeHTTP)
		}
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint")
	})
	return &handler{mux: mux, routes: s.routes, hosts: allowed, s: s}, nil
}

// handler is the API: its mux, and the routes registered on it, behind
// the Host allow-list.
type handler struct {
	mux    *http.ServeMux
	routes []route
	hosts  hosts
	s      *server
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.hosts.allows(r.Host) {
		h.s.misdirected(w, r)
		return
	}
	h.mux.ServeHTTP(w, r)
}

type server struct {
	cfg      Config
	connects connects
	events   *hub
	denials  *denials
	// local is who requests act as without a token store.
	local principal
	// routes are the routes registered with route.
	routes []route
}

// maxBody caps a request body.
const maxBody = 1 << 20

func (s *server) createRun(w http.ResponseWriter, r *http.Request) {
	var req agent.Request
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(&req)
	if err == nil && dec.More() {
		err = errTrailingData
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "the body is not a run request: "+decodeProblem(err))
		return
	}
	if req.Prompt == "" {
		writeError(w, http.StatusBadRequest, "bad_request", "a run needs a prompt")
		return
	}
	if err := scriptFromText(&req); err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	run, err := s.cfg.Runtime.Submit(r.Context(), s.actor(r).ID, &req)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.events.nudge()
	writeJSON(w, http.StatusCreated, toRun(run))
}

func (s *server) listRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := agent.RunFilter{Owner: q.Get("owner"), Status: agent.Status(q.Get("status")), Before: q.Get("before")}
	if f.Status != "" && !slices.Contains(statuses, f.Status) {
		writeError(w, http.StatusBadRequest, "bad_request", "status must be one of "+statusList())
		return
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, http.StatusBadRequest, "bad_request", "limit must be a number from 1 to 1000")
			return
		}
		f.Limit = n
	}
	runs, err := s.cfg.Store.RunList(r.Context(), f)
	if errors.Is(err, agent.ErrNotFound) && f.Before != "" {
		writeError(w, http.StatusBadRequest, "bad_request", "before names no run")
		return
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	out := make([]Run, len(runs))
	for i, run := range runs {
		out[i] = listed(toRun(run))
	}
	page := map[string]any{"runs": out}
	// A full page may have more behind it: the next starts before its last.
	if limit := cmp.Or(f.Limit, agent.DefaultRunListLimit); len(out) == limit {
		page["next_before"] = out[len(out)-1].ID
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *server) showRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	run, err := s.cfg.Store.RunGet(r.Context(), id)
	if err != nil {
		s.fail(w, err)
		return
	}
	steps, err := s.cfg.Store.StepList(r.Context(), id)
	if err != nil {
		s.fail(w, err)
		return
	}
	decisions, err := s.cfg.Store.ApprovalList(r.Context(), id)
	if err != nil {
		s.fail(w, err)
		return
	}
	detail := RunDetail{Run: toRun(run), Steps: make([]Step, len(steps)), Approvals: make([]Approval, len(decisions)), Audit: []AuditRow{}}
	if detail.Tasks, err = s.runTasks(r.Context(), run); err != nil {
		s.fail(w, err)
		return
	}
	detail.Question = s.question(r.Context(), run)
	for i, st := range steps {
		detail.Steps[i] = toStep(st)
	}
	for i, a := range decisions {
		detail.Approvals[i] = toApproval(a)
	}
	if s.cfg.Audit != nil {
		// A page, as GET /v1/audit gives: anyone may add rows to a run
		// (a refused request names it), so all of them could be many.
		q := audit.Query{RunID: id, Newest: true, Limit: defaultAuditLimit}
		rows, err := s.cfg.Audit.List(r.Context(), q)
		if err != nil {
			s.fail(w, err)
			return
		}
		// The newest page, shown oldest first as the steps are.
		for _, row := range slices.Backward(rows) {
			detail.Audit = append(detail.Audit, toAudit(row))
		}
		if len(rows) == q.Limit {
			detail.AuditNextBefore = rows[len(rows)-1].Seq
		}
	}
	writeJSON(w, http.StatusOK, detail)
}

func (s *server) cancelRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	start := s.cfg.Now()
	report, err := s.cfg.Runtime.CancelRun(r.Context(), s.actor(r), id)
	if err != nil {
		s.failRun(w, r, err)
		return
	}
	s.answerCancel(w, r, id, s.cfg.Now().Sub(start), report)
}

// answerCancel answers a cancel of run id that won, which took took: the
// run as it is now, and what became of its tasks.
func (s *server) answerCancel(w http.ResponseWriter, r *http.Request, id string, took time.Duration, report *agent.CancelReport) {
	s.events.nudge()
	run, err := s.cfg.Store.RunGet(r.Context(), id)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"run": toRun(run), "took_ms": float64(took.Microseconds()) / 1000,
		"tasks": toTaskCancels(report)})
}

// decide approves or denies the call a run waits on. The body may name
// that call ({"step", "call", "tool", "args_digest"}, as the run's pending
// shows it): then the decision lands only if the run waits on exactly that
// call, and is a conflict otherwise.
func (s *server) decide(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		d := agent.Decision{RunID: id, Approve: approve}
		var ref *CallRef
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
		dec.DisallowUnknownFields()
		err := dec.Decode(&ref)
		if err == nil && dec.More() {
			err = errTrailingData
		}
		if err != nil && !errors.Is(err, io.EOF) {
			writeError(w, http.StatusBadRequest, "bad_request", "the body is not a call: "+decodeProblem(err))
			return
		}
		if ref != nil {
			d.Call = &agent.CallRef{RunID: id, Step: ref.Step, Call: ref.Call, Tool: ref.Tool, ArgsDigest: ref.ArgsDigest}
		}
		err = s.cfg.Runtime.Decide(r.Context(), s.actor(r), d)
		switch {
		case errors.Is(err, agent.ErrFourEyes):
			// The runtime audited the refusal (call_approval_refused).
			writeError(w, http.StatusForbidden, "forbidden", "this call needs the approval of someone other than the run's owner (four eyes)")
			return
		case errors.Is(err, agent.ErrNotWaiting) && d.Call != nil:
			writeError(w, http.StatusConflict, "conflict", "the run is not waiting on the call named: look at it again")
			return
		case err != nil:
			s.failRun(w, r, err)
			return
		}
		s.writeChangedRun(w, r, id)
	}
}

// writeChangedRun replies to a request that changed the run id: whoever
// follows the event stream is nudged, and the reply is the run as it is now.
func (s *server) writeChangedRun(w http.ResponseWriter, r *http.Request, id string) {
	s.events.nudge()
	run, err := s.cfg.Store.RunGet(r.Context(), id)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"run": toRun(run)})
}

// fail maps an error to its status and stable code.
func (s *server) fail(w http.ResponseWriter, err error) {
	var limit *agent.LimitError
	switch {
	case errors.As(err, &limit):
		// What the client sent is over a limit, which the message names.
		writeError(w, http.StatusBadRequest, "bad_request", limit.Error())
	case errors.Is(err, agent.ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", "no such run")
	case errors.Is(err, agent.ErrForbidden):
		writeError(w, http.StatusForbidden, "forbidden", "you may not do that to this run")
	case errors.Is(err, agent.ErrFinished):
		writeError(w, http.StatusConflict, "conflict", "the run has already finished")
	case errors.Is(err, agent.ErrNotWaiting):
		writeError(w, http.StatusConflict, "conflict", "the run is not waiting for approval")
	default:
		s.cfg.Logger.Warn("api: request failed", "error", err)
		writeError(w, http.StatusInternalServerError, "internal", "internal error")
	}
}

// statuses are the statuses a list may be filtered by.
var statuses = []agent.Status{agent.StatusQueued, agent.StatusRunning, agent.StatusWaitingForApproval,
	agent.StatusWaitingForInput, agent.StatusCompleted, agent.StatusFailed, agent.StatusCancelled}

func statusList() string {
	names := make([]string, len(statuses))
	for i, st := range statuses {
		names[i] = string(st)
	}
	return strings.Join(names, ", ")
}

var errTrailingData = errors.New("trailing data")

// decodeProblem says what is wrong with a request body in the client's
// terms: the field, the position, the limit — never a Go type name.
func decodeProblem(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var tooBig *http.MaxBytesError
	switch {
	case errors.Is(err, io.EOF):
		return "the body is empty"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON ends too early"
	case errors.Is(err, errTrailingData):
		return "there is more after the JSON object"
	case errors.As(err, &syntax) && strings.Contains(syntax.Error(), "exceeded max depth"):
		// encoding/json's own bound (10,000), far past the runtime's.
		return "nested deeper than " + strconv.Itoa(agent.MaxJSONDepth) + " levels (agent.MaxJSONDepth)"
	case errors.As(err, &syntax):
		return "invalid JSON at byte " + strconv.FormatInt(syntax.Offset, 10)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return "the body must be a JSON object"
		}
		return "field " + strconv.Quote(typ.Field) + " must be a JSON " + jsonKind(typ.Type.Kind())
	case errors.As(err, &tooBig):
		return "the body is larger than " + strconv.FormatInt(tooBig.Limit, 10) + " bytes"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	default:
		return "unreadable JSON"
	}
}

func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "string"
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Bool:
		return "boolean"
	default:
		return "number"
	}
}

// writeJSON answers with v as compact JSON. Never indented: an encoder's
// indent re-indents every stored JSON value inside v at every depth, so
// the answer would grow with the square of a value's depth.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}
