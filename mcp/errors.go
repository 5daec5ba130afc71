package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
)

var (
	// ErrCancelled reports a call abandoned because its caller's context was
	// cancelled. An error that matches it also matches [context.Canceled] and
	// the context's cause, if it has one.
	ErrCancelled = errors.New("mcp: call cancelled")

	// ErrTimeout reports a call abandoned because a deadline passed: the
	// call's Timeout, the client's default request timeout, MaxTotalTimeout,
	// or the deadline of the caller's context. An error that matches it also
	// matches [context.DeadlineExceeded].
	ErrTimeout = errors.New("mcp: call timed out")

	// ErrClosed reports a call on, or interrupted by, a connection that is
	// closed: by [Client.Close], or because the server went away.
	ErrClosed = errors.New("mcp: connection closed")
)

// JSON-RPC error codes a server may answer with. Compare them with
// errors.Is(err, &mcp.RPCError{Code: mcp.CodeMethodNotFound}).
const (
	CodeParseError                 = jsonrpc.CodeParseError
	CodeInvalidRequest             = jsonrpc.CodeInvalidRequest
	CodeMethodNotFound             = jsonrpc.CodeMethodNotFound
	CodeInvalidParams              = jsonrpc.CodeInvalidParams
	CodeInternalError              = jsonrpc.CodeInternalError
	CodeHeaderMismatch             = jsonrpc.CodeHeaderMismatch
	CodeMissingClientCapability    = jsonrpc.CodeMissingClientCapability
	CodeUnsupportedProtocolVersion = jsonrpc.CodeUnsupportedProtocolVersion
	// CodeResourceNotFound is the MCP specification's code for a
	// resources/read of a URI the server does not have.
	CodeResourceNotFound = -32002
)

// RPCError is an error response from the server. A tool that fails reports
// it in [CallToolResult.IsError], not with an RPCError: an RPCError means the
// server refused or could not process the request itself.
type RPCError struct {
	Code    int64
	Message string
	Data    json.RawMessage // optional details, as the server sent them
}

// Error returns the server's code and message.
func (e *RPCError) Error() string {
	return fmt.Sprintf("mcp: server error %d: %s", e.Code, e.Message)
}

// Is reports whether target is an *RPCError with the same code, so that
// errors.Is(err, &RPCError{Code: CodeMethodNotFound}) works.
func (e *RPCError) Is(target error) bool {
	t, ok := target.(*RPCError)
	return ok && t.Code == e.Code
}

// ProtocolError reports a message from the server that breaks the protocol:
// a malformed frame, a response of the wrong shape, an unknown result type.
type ProtocolError struct {
	Reason string
}

// Error says which rule of the protocol the server broke.
func (e *ProtocolError) Error() string { return "mcp: protocol violation: " + e.Reason }

// interruptedError is what a call returns when its context is cancelled or a
// deadline passes. It matches ErrCancelled or ErrTimeout, the matching context
// error, and the context's cause.
type interruptedError struct {
	method string
	kind   error // ErrCancelled or ErrTimeout
	ctxErr error // context.Canceled or context.DeadlineExceeded
	cause  error // context.Cause, when it says more than ctxErr
}

func (e *interruptedError) Error() string {
	var b strings.Builder
	b.WriteString(e.kind.Error())
	b.WriteString(" (")
	b.WriteString(e.method)
	b.WriteString(")")
	if e.cause != nil {
		b.WriteString(": ")
		b.WriteString(e.cause.Error())
	}
	return b.String()
}

func (e *interruptedError) Unwrap() []error {
	if e.cause != nil {
		return []error{e.kind, e.ctxErr, e.cause}
	}
	return []error{e.kind, e.ctxErr}
}

// Timeout reports whether the call was stopped by a deadline, as net.Error does.
func (e *interruptedError) Timeout() bool { return e.kind == ErrTimeout }

// errCallTimeout is the cancellation cause of a call's own timers. It
// matches context.DeadlineExceeded, so whoever reads the cause of an
// abandoned request (egress's audit) sees a deadline, not a cancel.
var errCallTimeout = fmt.Errorf("mcp: call timer expired: %w", context.DeadlineExceeded)

// stopCause says why an interrupted request is abandoned, for whoever reads
// context.Cause of the request's own context below the client (egress
// audits a deadline as a failure and a cancellation as a cancellation): it
// matches context.DeadlineExceeded for any deadline — the call's timers,
// the caller's deadline, a budget given with context.WithTimeoutCause — and
// context.Canceled otherwise, carrying the caller's cause when there is one.
func stopCause(waitCtx context.Context) error {
	cause := context.Cause(waitCtx)
	deadline := errors.Is(waitCtx.Err(), context.DeadlineExceeded) || errors.Is(cause, context.DeadlineExceeded)
	switch {
	case cause == nil:
		return context.Canceled
	case deadline && !errors.Is(cause, context.DeadlineExceeded):
		return fmt.Errorf("%w: %w", context.DeadlineExceeded, cause)
	case !deadline && !errors.Is(cause, context.Canceled):
		return fmt.Errorf("%w: %w", context.Canceled, cause)
	}
	return cause
}

// interruption turns a finished wait context into the error a call returns.
// The caller's cancellation wins over every deadline.
func interruption(method string, callerCtx context.Context) error {
	if err := callerCtx.Err(); err != nil {
		e := &interruptedError{method: method, kind: ErrCancelled, ctxErr: context.Canceled}
		if errors.Is(err, context.DeadlineExceeded) {
			e.kind, e.ctxErr = ErrTimeout, context.DeadlineExceeded
		}
		if cause := context.Cause(callerCtx); cause != nil && cause != err {
			e.cause = cause
		}
		return e
	}
	return &interruptedError{method: method, kind: ErrTimeout, ctxErr: context.DeadlineExceeded}
}

// closedError wraps the reason a connection went away so that it matches ErrClosed.
func closedError(reason error) error {
	if reason == nil || errors.Is(reason, ErrClosed) {
		if reason == nil {
			return ErrClosed
		}
		return reason
	}
	return fmt.Errorf("%w: %w", ErrClosed, reason)
}
