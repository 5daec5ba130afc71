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
	CreatedAt     time.Time       `json:"created_at"`
	StartedAt     *time.Time      `json:"started_at,omitempty"`
	FinishedAt    *time.Time      `json:"finished_at,omitempty"`
}

// RunDetail is a run with its steps and audit rows. Audit is the newest
// page of the run's rows (as GET /v1/audit?run=ID gives it), oldest first
// as the steps are; AuditNextBefore, if not zero, is the before of GET
// /v1/audit?run=ID for the older rows.
type RunDetail struct {
	Run             Run        `json:"run"`
	Steps           []Step     `json:"steps"`
	Audit           []AuditRow `json:"audit"`
	AuditNextBefore int64      `json:"audit_next_before,omitempty"`
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
