package egress

import (
	"context"
	"errors"
	"fmt"
)

// ErrRefused is matched by every [RefusedError]: the request was refused
// before anything was sent.
var ErrRefused = errors.New("egress: request refused")

// RefusedError reports a request refused by one of the guards. Nothing was
// sent. It never carries a secret, a header value or a query string.
type RefusedError struct {
	// Reason is the fixed literal that the audit row also carries.
	Reason Reason
	// Host is the request URL's host (with port, if any).
	Host string
	// Detail adds what the guard saw, such as "127.0.0.1 is loopback";
	// it may be empty.
	Detail string
	// Err is an underlying error, such as a vault error; it may be nil.
	Err error
}

// Error says which host was refused and why.
func (e *RefusedError) Error() string {
	msg := fmt.Sprintf("egress: refused request to %q: %s", e.Host, e.Reason)
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns [ErrRefused] and the underlying error, if any.
func (e *RefusedError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrRefused}
	}
	return []error{ErrRefused, e.Err}
}

// CancelledError reports a request whose context was cancelled (not timed
// out). It matches [context.Canceled] and the context's cause.
type CancelledError struct {
	// BeforeSend reports that the cancellation was seen before any secret
	// was read: nothing egressed. If false, the request, credential
	// included, had been handed to the transport.
	BeforeSend bool
	// Cause is [context.Cause] of the request's context.
	Cause error
}

// Error says whether anything egressed, and the cause.
func (e *CancelledError) Error() string {
	if e.BeforeSend {
		return fmt.Sprintf("egress: cancelled before send, nothing egressed: %v", e.Cause)
	}
	return fmt.Sprintf("egress: cancelled in flight: %v", e.Cause)
}

// Unwrap returns [context.Canceled] and the cause.
func (e *CancelledError) Unwrap() []error { return []error{context.Canceled, e.Cause} }

// ResponseTooLargeError is returned by a response body's Read once the body
// exceeds [Config.MaxResponseBytes].
type ResponseTooLargeError struct {
	// Limit is the cap in bytes.
	Limit int64
}

// Error states the cap.
func (e *ResponseTooLargeError) Error() string {
	return fmt.Sprintf("egress: response body exceeds the %d-byte cap", e.Limit)
}
