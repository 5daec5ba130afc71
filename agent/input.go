package agent

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// InputMode says what a server's question asks of the operator.
type InputMode string

// Input modes, as MCP elicitation names them.
const (
	// InputForm asks for values, described by a JSON schema.
	InputForm InputMode = "form"
	// InputURL asks the operator to visit a URL (to sign in, to pay …)
	// outside andon. andon shows the URL and never opens it itself.
	InputURL InputMode = "url"
)

// InputStatus is where a question to the operator is in its life.
// Pending is the only status a question leaves.
type InputStatus string

// The statuses of an [InputRequest].
const (
	InputPending   InputStatus = "pending"
	InputAccepted  InputStatus = "accepted"  // the operator answered
	InputDeclined  InputStatus = "declined"  // the operator refused to answer
	InputCancelled InputStatus = "cancelled" // the run was cancelled, or the call ended, while it waited
	InputExpired   InputStatus = "expired"   // the call's budget or the run's deadline passed first
)

// InputRequest is a question a server asked the operator during a run
// (MCP elicitation): while it is pending, its run is waiting_for_input
// and the tool call that asked it is held open by the segment that runs
// it, in whichever process that is.
type InputRequest struct {
	ID    string
	RunID string
	// Server and Tool name who asks: the MCP server and the tool call
	// during which it asked.
	Server string
	Tool   string
	Mode   InputMode
	// Message is the server's question: untrusted text, shown as text.
	Message string
	// Schema is the requested schema of a form question (JSON).
	Schema json.RawMessage
	// URL is what a url question asks the operator to visit. Shown,
	// never opened by andon.
	URL    string
	Status InputStatus
	// Content is the operator's answer to a form question (a JSON
	// object), kept only until the segment holding the call takes it:
	// the store clears it then ([InputStore.RunInputDone]).
	Content json.RawMessage
	// By is who answered or declined.
	By         string
	CreatedAt  time.Time
	ExpiresAt  time.Time // when the call that asked gives up waiting
	AnsweredAt time.Time // zero while pending
}

// InputStore keeps the questions servers ask operators. Package sqlstore
// implements it. Every method that changes a question or a run is one
// guarded statement or transaction, safe across processes.
type InputStore interface {
	// RunAwaitInput stores q (pending) and moves its run from running to
	// waiting_for_input, in one transaction, only if owner holds the run;
	// the lease stays with owner, who renews it while it waits. It
	// reports false, storing nothing, if owner does not hold a running
	// run (it was cancelled, or the lease is gone).
	RunAwaitInput(ctx context.Context, q *InputRequest, owner string) (bool, error)
	// RunInputDone ends the wait of owner's segment on question id: the
	// question, if still pending, takes status final; its content is
	// cleared whatever its status; and the run, if still
	// waiting_for_input and held by owner, moves back to running with a
	// lease until leaseUntil. It reports whether the run did (false: it
	// was cancelled meanwhile, or is no longer owner's).
	RunInputDone(ctx context.Context, id, owner string, final InputStatus, leaseUntil time.Time) (bool, error)
	// InputAnswer moves question id from pending to status (accepted or
	// declined), storing content (accepted form questions only), by and
	// at; false if it was not pending (answered, or ended, already).
	InputAnswer(ctx context.Context, id string, status InputStatus, content json.RawMessage, by string, at time.Time) (bool, error)
	// InputGet reads a question, or returns ErrInputNotFound.
	InputGet(ctx context.Context, id string) (*InputRequest, error)
	// InputPending returns the pending question of a run that is
	// waiting_for_input, or nil.
	InputPending(ctx context.Context, runID string) (*InputRequest, error)
	// InputList returns a run's questions, oldest first, without their
	// content.
	InputList(ctx context.Context, runID string) ([]*InputRequest, error)
}

// ErrInputNotFound is returned by an InputStore for a question that does
// not exist.
var ErrInputNotFound = errors.New("agent: input request not found")

// ErrNotWaitingForInput reports an answer for a run that has no pending
// question (or one other than the question named), or whose question was
// answered, declined or ended already.
var ErrNotWaitingForInput = errors.New("agent: run is not waiting for input")

// ErrInvalidAnswer reports an answer that does not fit the question's
// requested schema. Its text says why, naming fields, never their values.
var ErrInvalidAnswer = errors.New("agent: the answer does not fit the requested schema")

// ErrNoOperator reports a question that cannot go to an operator: the
// call was not made by a run of a runtime with an InputStore.
var ErrNoOperator = errors.New("agent: no operator to ask")
