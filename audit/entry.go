package audit

import (
	"strings"
	"time"
)

// Action names what a row records. The values are part of the MAC and never
// change meaning.
type Action string

// The actions egress writes, one row per call.
const (
	// ActionHTTPCall is a call that completed or failed, or was refused
	// before anything was sent. A deadline is a failure, not a
	// cancellation.
	ActionHTTPCall Action = "http_call"
	// ActionHTTPCallCancelled is a call whose context was cancelled after
	// the request, credential included, was handed to the transport: treat
	// the credential as having gone out.
	ActionHTTPCallCancelled Action = "http_call_cancelled"
	// ActionHTTPCallCancelledBeforeSend is a call whose context was
	// cancelled before any secret was read: nothing egressed.
	ActionHTTPCallCancelledBeforeSend Action = "http_call_cancelled_before_send"
	// ActionOAuthToken is an OAuth token request (a code exchange, a
	// refresh, client credentials), in place of its http_call row.
	// Purpose names the server and the issuer; Reason names the grant
	// type and the outcome ("refresh_token: ok", "authorization_code:
	// cancelled in flight, abandoned"). Never a token, code or secret.
	ActionOAuthToken Action = "oauth_token"
)

// The actions the CLI writes when secrets change.
const (
	// ActionSecretSet records that a secret was stored or replaced.
	ActionSecretSet Action = "secret_set"
	// ActionSecretRemoved records that a secret was removed.
	ActionSecretRemoved Action = "secret_removed"
	// ActionKeyRotated records that the master key was rotated.
	ActionKeyRotated Action = "key_rotated"
)

// The actions of the API and of its tokens.
const (
	// ActionAPIDenied records a request the API refused: no valid token
	// (status 401) or not allowed (403). Purpose names the token (id,
	// name, role), never its secret; Reason says why.
	ActionAPIDenied Action = "api_denied"
	// ActionAPIDeniedRepeated records that more requests were refused for
	// the cause of an api_denied row (the same token or none, route and
	// reason) while that cause was coalesced: Purpose, RunID, Method,
	// Path and Status repeat the first row's, Reason is its reason with
	// the count, as "no token (41 more)", and Duration spans the first
	// refusal to the last one counted.
	ActionAPIDeniedRepeated Action = "api_denied_repeated"
	// ActionTokenCreated records that an API token was made.
	ActionTokenCreated Action = "token_created"
	// ActionTokenRevoked records that an API token was revoked.
	ActionTokenRevoked Action = "token_revoked"
)

// The actions of the runtime: operators' decisions on tool calls. Each row
// names the run (RunID), who decided (Purpose: "by NAME") and the call
// (Path: "TOOL step=N call=M args=sha256:…", never the arguments); Reason
// is a fixed literal.
const (
	// ActionCallApproved records an approval of one tool call. Reason
	// "admin override of four eyes" marks an admin approving their own
	// run's call that needed another person.
	ActionCallApproved Action = "call_approved"
	// ActionCallDenied records a denial of one tool call.
	ActionCallDenied Action = "call_denied"
	// ActionCallApprovalRefused records an approval the runtime refused:
	// the run's owner approving a call that needs another person.
	ActionCallApprovalRefused Action = "call_approval_refused"
)

// The action of a tool call, whatever its server's transport: one row per
// call of an MCP tool, once it has ended (egress's http_call rows, one per
// HTTP request, sit beside it for a server reached over HTTP). RunID names
// the run, Host the server's name in andon.yaml, Path the call as an
// approval names it ("TOOL step=N call=M args=sha256:…", never the
// arguments), Duration how long it took; OK is true for a result the tool
// did not mark as an error. Reason is a fixed literal: the outcome, and
// for a call that did not end with a result, why — "ok", "tool error",
// "failed", "timed out: budget", "timed out: run deadline", "cancelled:
// run cancelled", "cancelled: lease lost", "cancelled: caller".
const ActionToolCall Action = "tool_call"

// The action of the catalogue once it knows what became of a tool call
// after its cancel went out (mcp.CancelOutcome): one row per cancelled
// call, beside its tool_call row, a few seconds after it at most. RunID
// names the run, Host the server's name in andon.yaml, Path the call as
// tool_call's does; Reason is the outcome — "confirmed" (the stdio
// server exited), "completed_anyway" (a result came after the cancel:
// the work was not stopped), "unconfirmed" (the server said nothing, as
// most revisions allow) — and OK is false only for completed_anyway.
const ActionCancelOutcome Action = "cancel_outcome"

// The action of the runtime when it stops a tool call's MCP task: one row
// per tasks/cancel. RunID names the run, Purpose who sent it ("by the
// worker holding the call", "by NAME", "by the reaper"), Host the server's
// name in andon.yaml, Path the call and the task ("TOOL step=N call=M
// task=ID"); Reason is the server's answer (acknowledged, rejected,
// unreachable) and OK is true only when it acknowledged.
const ActionTaskCancel Action = "task_cancel"

// The actions of operators' replies to a server's question during a run
// (elicitation). Each row names the run, who replied (Purpose: "by NAME"),
// and the question (Path: "SERVER TOOL question=ID fields=a,b": the names of
// the fields given, never their values).
const (
	// ActionInputAnswered records an answer to a question.
	ActionInputAnswered Action = "input_answered"
	// ActionInputDeclined records a refusal to answer.
	ActionInputDeclined Action = "input_declined"
)

// Entry is what a caller records. It never holds a secret, a header value or
// a query string: [Log.Record] drops anything after '?' or '#' in Path.
type Entry struct {
	// Time is when the call started. Zero means now.
	Time time.Time
	// Action says how the call ended.
	Action Action
	// Purpose says what the call was for (the egress client's purpose).
	Purpose string
	// RunID is the agent run the call was made for, or empty.
	RunID string
	// Method is the HTTP method.
	Method string
	// Host is the URL's host, with its port if the URL had one.
	Host string
	// Path is the URL's path, without query string or fragment.
	Path string
	// Status is the HTTP status code, or 0 if no response arrived.
	Status int
	// OK reports a completed call with a 2xx status.
	OK bool
	// Reason is a fixed literal saying why the call ended as it did. It is
	// never built from upstream text.
	Reason string
	// Duration is how long the call took, to the end of its response body.
	Duration time.Duration
}

// Row is an [Entry] as stored: numbered and chained.
type Row struct {
	// Seq numbers rows from 1 without gaps.
	Seq int64
	Entry
	// MAC is HMAC-SHA256 over the row's fields and the previous row's MAC.
	MAC []byte
}

// Head is the store's record of the chain's end, updated with every append.
// Its text form ([Head.MarshalText], printed by "andon audit head") is what
// an operator keeps elsewhere, to check the log against later
// ([Log.VerifyKept]).
type Head struct {
	// Seq is the last row's sequence number; 0 for an empty log.
	Seq int64
	// First is the sequence number the chain begins at: 1. It is 0 for an
	// empty log, and for a head sealed before heads recorded it (a
	// database older than schema version 7), whose chain began at 1 too.
	First int64
	// Length is the number of rows the chain holds, First through Seq.
	Length int64
	// MAC is the last row's MAC; nil for an empty log.
	MAC []byte
	// Seal is an HMAC over the other fields, so that the head cannot be
	// moved back, shortened or moved to another chain without the key.
	Seal []byte
}

// cleanPath removes a query string and fragment.
func cleanPath(p string) string {
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	return p
}
