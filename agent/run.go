package agent

import (
	"encoding/json"
	"time"
)

// Status is where a run is in its life. Every change of status is a
// guarded transition in the [Store]: it names the status it expects, and
// reports whether it won.
type Status string

// The statuses of a run. Completed, failed and cancelled are terminal: a run
// never leaves them.
const (
	StatusQueued             Status = "queued"
	StatusRunning            Status = "running"
	StatusWaitingForApproval Status = "waiting_for_approval"
	StatusWaitingForInput    Status = "waiting_for_input"
	StatusCompleted          Status = "completed"
	StatusFailed             Status = "failed"
	StatusCancelled          Status = "cancelled"
)

// Terminal reports whether s is a status a run never leaves.
func (s Status) Terminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// Reason says why a run ended.
type Reason string

// Termination reasons.
const (
	ReasonCompleted Reason = "completed"
	ReasonCancelled Reason = "cancelled"
	ReasonMaxRounds Reason = "max_rounds"
	// ReasonMaxCallsPerTurn: a model turn asked for more tool calls than
	// [Config].MaxCallsPerTurn; none of them was made.
	ReasonMaxCallsPerTurn Reason = "max_calls_per_turn"
	// ReasonMaxCallsPerRun: a model turn would have taken the run past
	// [Config].MaxCallsPerRun tool calls; none of its calls was made.
	ReasonMaxCallsPerRun Reason = "max_calls_per_run"
	ReasonDeadline       Reason = "deadline"
	ReasonModelFailed    Reason = "model_failed"
	ReasonNotRetryable   Reason = "not_retryable" // found mid non-idempotent write: dead-lettered
	ReasonFailed         Reason = "failed"
)

// Run is one agent run, as the store holds it.
type Run struct {
	ID    string
	Owner string // who started it; they, or an admin, may cancel it
	// Request is what the run was asked to do (a JSON [Request]).
	Request json.RawMessage
	Status  Status
	Reason  Reason // set once terminal
	// Error is a short, fixed description of a failure. Never a secret.
	Error string

	// LeaseOwner and LeaseExpires name the segment executing the run and
	// how long its claim holds without renewal; empty when none does. A run
	// finished by [Store.RunFinish] keeps its owner, without a deadline:
	// the one segment that may still record the step it had in flight when
	// the run was cancelled.
	LeaseOwner   string
	LeaseExpires time.Time
	// PendingEffect is the write fence: the effect of a tool call in
	// flight, stamped before it starts and cleared only once its step is
	// recorded on a run that is not cancelled. Empty when no write is in
	// flight.
	PendingEffect Effect
	// Suspended is the resumable state of a run waiting for approval: the
	// call it waits on, as a JSON [PendingCall] (see [Run.Pending]).
	Suspended json.RawMessage
	// Attempts counts the times the run was claimed.
	Attempts int
	// Home is the WorkerID of the runtime that alone executes the run: one
	// started by [Runtime.Call], whose caller waits for it in that
	// process. It never goes to a queue; a decision made elsewhere hands
	// it back to its home. Empty: any worker.
	Home string

	// Trace is the W3C traceparent of the span that submitted the run:
	// every segment of it, on whichever worker, continues that trace.
	// CancelTrace is that of the span that cancelled it, which the
	// segment that carries the cancel out links to. Empty when the
	// process that wrote it did not trace (see [TraceParent]).
	Trace, CancelTrace string

	CreatedAt  time.Time
	StartedAt  time.Time // zero until first claimed
	FinishedAt time.Time // zero until terminal
}

// Request is what a run is asked to do.
type Request struct {
	// Prompt is the user's message that starts the conversation.
	Prompt string `json:"prompt"`
	// Model names the model: "script" (the default) runs Script.
	Model string `json:"model,omitempty"`
	// Script is the model/script program, for the script model.
	Script json.RawMessage `json:"script,omitempty"`
	// Call, if set, is the one tool call the run makes, for a caller
	// outside the runtime ([Runtime.Call]); there is no model.
	Call *DirectCall `json:"call,omitempty"`
}

// StepKind says what a step records.
type StepKind string

// Kinds of step.
const (
	StepModel    StepKind = "model"    // a model turn
	StepTool     StepKind = "tool"     // a tool call and its outcome
	StepApproval StepKind = "approval" // an operator's decision on a tool call
	StepInput    StepKind = "input"    // a server's question to the operator, and how it ended
)

// Outcome is how a tool call ended. A cancelled call is its own outcome,
// not an error: the server did nothing wrong.
type Outcome string

// Tool call outcomes.
const (
	OutcomeOK        Outcome = "ok"
	OutcomeError     Outcome = "error"  // the tool reported a failure (isError)
	OutcomeFailed    Outcome = "failed" // the call could not be made or completed
	OutcomeCancelled Outcome = "cancelled"
	OutcomeDenied    Outcome = "denied" // an operator refused the call
	// OutcomeStale is an approval step's: the approval no longer covers
	// its call, whose tool changed since (see [IdentifiedTool]).
	OutcomeStale Outcome = "stale"
)

// Step is one recorded event of a run. Steps are appended in order.
type Step struct {
	RunID    string
	Seq      int // 1, 2, …, assigned by the store
	At       time.Time
	Kind     StepKind
	Round    int
	Tool     string          // for tool and approval steps
	Args     json.RawMessage // the tool call's arguments
	Outcome  Outcome         // for tool and approval steps
	Text     string          // model text, or the tool result as the model sees it
	Duration time.Duration
}
