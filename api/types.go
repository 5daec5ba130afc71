package api

import (
	"encoding/json"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/audit"
)

// Run is a run as the API shows it.
type Run struct {
	ID            string          `json:"id"`
	Owner         string          `json:"owner"`
	Status        string          `json:"status"`
	Reason        string          `json:"reason,omitempty"`
	Error         string          `json:"error,omitempty"`
	PendingEffect string          `json:"pending_effect,omitempty"`
	LeaseOwner    string          `json:"lease_owner,omitempty"`
	Attempts      int             `json:"attempts"`
	Request       json.RawMessage `json:"request,omitempty"`
	// RequestOmitted says that a list left Request out: it was larger
	// than a list shows (see listed); the run's detail has it.
	RequestOmitted bool `json:"request_omitted,omitempty"`
	// Pending is the call a run waiting for approval waits on: what an
	// approval approves.
	Pending *PendingCall `json:"pending,omitempty"`
	// Gateway, for a call an MCP client made through the gateway, says
	// which: its tool, client and session (see GET /v1/gateway/sessions).
	Gateway    *GatewayCall `json:"gateway,omitempty"`
	CreatedAt  time.Time    `json:"created_at"`
	StartedAt  *time.Time   `json:"started_at,omitempty"`
	FinishedAt *time.Time   `json:"finished_at,omitempty"`
}

// RunDetail is a run with its steps, the decisions on its calls and its
// audit rows. Audit is the newest page of the run's rows (as GET
// /v1/audit?run=ID gives it), oldest first as the steps are;
// AuditNextBefore, if not zero, is the before of GET /v1/audit?run=ID for
// the older rows.
type RunDetail struct {
	Run Run `json:"run"`
	// Question is the question a run waiting for input waits on.
	Question  *Question  `json:"question,omitempty"`
	Steps     []Step     `json:"steps"`
	Approvals []Approval `json:"approvals"`
	// Tasks are the calls that became MCP tasks on their servers (tasks.go).
	Tasks           []Task     `json:"tasks,omitempty"`
	Audit           []AuditRow `json:"audit"`
	AuditNextBefore int64      `json:"audit_next_before,omitempty"`
}

// CallRef names one tool call of a run exactly (see agent.CallRef): the
// model step that asked for it, its place among that step's calls (from
// 1), the tool and the SHA-256 of its canonical arguments. An approve or
// deny request may carry it, to decide only on the call it names.
type CallRef struct {
	Step       int    `json:"step"`
	Call       int    `json:"call"`
	Tool       string `json:"tool"`
	ArgsDigest string `json:"args_digest"`
}

// PendingCall is the call a run waits on, with its arguments.
type PendingCall struct {
	CallRef
	Args json.RawMessage `json:"args,omitempty"`
	// ArgsOmitted says that a list left Args out, as RequestOmitted.
	ArgsOmitted bool `json:"args_omitted,omitempty"`
	// CallID is the model's id of the call: shown, never matched (models
	// reuse ids).
	CallID string `json:"call_id,omitempty"`
	// FourEyes says that the run's owner may not approve the call; an
	// admin may, as an audited override.
	FourEyes bool `json:"four_eyes"`
}

// Approval is an operator's decision on one call of a run.
type Approval struct {
	CallRef
	CallID   string    `json:"call_id,omitempty"`
	Approved bool      `json:"approved"`
	By       string    `json:"by"`
	Override bool      `json:"override"` // an admin approved their own run's four-eyes call
	At       time.Time `json:"at"`
}

// Step is a step as the API shows it.
type Step struct {
	Seq        int             `json:"seq"`
	At         time.Time       `json:"at"`
	Kind       string          `json:"kind"`
	Round      int             `json:"round"`
	Tool       string          `json:"tool,omitempty"`
	Args       json.RawMessage `json:"args,omitempty"`
	Outcome    string          `json:"outcome,omitempty"`
	Text       string          `json:"text,omitempty"`
	DurationMS float64         `json:"duration_ms"`
}

// AuditRow is an audit row as the API shows it. Sent says whether the
// request — and the credential on it, if it had one — left the building:
// true for a call cancelled in flight and for a call that got a response;
// false for a call cancelled before send and for a refusal. Purpose says on
// whose behalf: an egress client's purpose, or for an api_denied row the
// token (id, name, role — never its secret).
type AuditRow struct {
	Seq        int64     `json:"seq"`
	Time       time.Time `json:"time"`
	Action     string    `json:"action"`
	RunID      string    `json:"run_id,omitempty"`
	Purpose    string    `json:"purpose,omitempty"`
	Method     string    `json:"method,omitempty"`
	Host       string    `json:"host,omitempty"`
	Path       string    `json:"path,omitempty"`
	Status     int       `json:"status,omitempty"`
	OK         bool      `json:"ok"`
	Reason     string    `json:"reason,omitempty"`
	DurationMS float64   `json:"duration_ms"`
	Sent       bool      `json:"sent"`
}

func toRun(r *agent.Run) Run {
	out := Run{
		ID: r.ID, Owner: r.Owner, Status: string(r.Status), Reason: string(r.Reason), Error: r.Error,
		PendingEffect: string(r.PendingEffect), LeaseOwner: r.LeaseOwner, Attempts: r.Attempts,
		Request: r.Request, CreatedAt: r.CreatedAt,
	}
	if p := r.Pending(); p != nil {
		out.Pending = &PendingCall{CallRef: toCallRef(p.CallRef), Args: p.Args, CallID: p.CallID, FourEyes: p.FourEyes}
		if len(out.Pending.Args) == 0 {
			out.Pending.Args = json.RawMessage(`{}`)
		}
	}
	out.Gateway = gatewayCall(r.Request)
	if !r.StartedAt.IsZero() {
		t := r.StartedAt
		out.StartedAt = &t
	}
	if !r.FinishedAt.IsZero() {
		t := r.FinishedAt
		out.FinishedAt = &t
	}
	return out
}

// maxListed bounds each stored JSON value that a list shows of a run (its
// request, the arguments of the call it waits on): a larger one is left
// out, flagged, for GET /v1/runs/{id} to show. A page of 1,000 runs is
// then at most a few MiB, whatever the runs hold.
const maxListed = 4 << 10

// listed is r as a list shows it: see maxListed.
func listed(r Run) Run {
	if len(r.Request) > maxListed {
		r.Request, r.RequestOmitted = nil, true
	}
	if r.Pending != nil && len(r.Pending.Args) > maxListed {
		p := *r.Pending
		p.Args, p.ArgsOmitted = nil, true
		r.Pending = &p
	}
	return r
}

func toCallRef(r agent.CallRef) CallRef {
	return CallRef{Step: r.Step, Call: r.Call, Tool: r.Tool, ArgsDigest: r.ArgsDigest}
}

func toApproval(a *agent.Approval) Approval {
	return Approval{CallRef: toCallRef(a.CallRef), CallID: a.CallID, Approved: a.Approved, By: a.By, Override: a.Override, At: a.At}
}

func toStep(s *agent.Step) Step {
	return Step{Seq: s.Seq, At: s.At, Kind: string(s.Kind), Round: s.Round, Tool: s.Tool, Args: s.Args,
		Outcome: string(s.Outcome), Text: s.Text, DurationMS: float64(s.Duration.Microseconds()) / 1000}
}

func toAudit(r audit.Row) AuditRow {
	e := r.Entry
	return AuditRow{Seq: r.Seq, Time: e.Time, Action: string(e.Action), RunID: e.RunID, Purpose: e.Purpose, Method: e.Method, Host: e.Host, Path: e.Path,
		Status: e.Status, OK: e.OK, Reason: e.Reason, DurationMS: float64(e.Duration.Microseconds()) / 1000,
		Sent: e.Action == audit.ActionHTTPCallCancelled || (e.Action == audit.ActionHTTPCall && e.Status != 0)}
}
