package egress

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/andonhq/andon/audit"
)

// call is one request's passage through the transport. Whatever path it
// takes, end runs once and writes the call's one audit row.
type call struct {
	t     *Transport
	ctx   context.Context
	start time.Time
	entry audit.Entry
	once  sync.Once
	// leg is set for an OAuth token request ([WithTokenLeg]), whose one
	// row is an oauth_token row.
	leg   TokenLeg
	isLeg bool
	// span is the request's span, if its caller traces (trace.go).
	span trace.Span
}

func (t *Transport) begin(req *http.Request) *call {
	ctx := req.Context()
	c := &call{t: t, ctx: ctx, start: time.Now()}
	c.leg, c.isLeg = tokenLegFrom(ctx)
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	c.entry = audit.Entry{Time: c.start, Purpose: t.purpose, RunID: RunFrom(ctx), Method: method}
	if req.URL != nil {
		// Built from the caller's URL, before any credential is placed:
		// no userinfo, and the query string is left out.
		c.entry.Host = req.URL.Host
		c.entry.Path = req.URL.EscapedPath()
	}
	c.startSpan(req)
	return c
}

// end writes the call's audit row, once.
func (c *call) end(action audit.Action, status int, ok bool, reason Reason) {
	c.once.Do(func() {
		e := c.entry
		e.Action, e.Status, e.OK, e.Reason, e.Duration = action, status, ok, string(reason), time.Since(c.start)
		if c.isLeg {
			e = asTokenRow(e, c.leg)
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), c.t.auditTimeout)
		defer cancel()
		if _, err := c.t.audit.Record(ctx, e); err != nil {
			c.t.logger.ErrorContext(ctx, "egress: audit row not written",
				"action", string(action), "purpose", e.Purpose, "run", e.RunID,
				"method", e.Method, "host", e.Host, "path", e.Path, "reason", string(reason), "err", err)
		}
		c.endSpan(action, status, ok, reason)
	})
}

// refuse ends a call that a guard refused.
func (c *call) refuse(r *RefusedError) error {
	c.t.logger.WarnContext(c.ctx, "egress: request refused",
		"purpose", c.entry.Purpose, "run", c.entry.RunID, "method", c.entry.Method,
		"host", c.entry.Host, "path", c.entry.Path, "reason", string(r.Reason))
	c.end(audit.ActionHTTPCall, 0, false, r.Reason)
	return r
}

// stopBeforeSend ends a call whose context was done before any secret was
// read.
func (c *call) stopBeforeSend() error {
	if timedOut(c.ctx) {
		c.end(audit.ActionHTTPCall, 0, false, ReasonDeadlineBeforeSend)
		return deadlineError(c.ctx, "egress: deadline exceeded before send, nothing egressed")
	}
	c.end(audit.ActionHTTPCallCancelledBeforeSend, 0, false, ReasonCancelledBeforeSend)
	return &CancelledError{BeforeSend: true, Cause: context.Cause(c.ctx)}
}

// failInFlight ends a call whose round trip failed after the request was
// handed to the transport.
func (c *call) failInFlight(err error) error {
	if c.ctx.Err() != nil {
		c.endAfter(0, ReasonTransport)
		return c.contextError(err)
	}
	c.end(audit.ActionHTTPCall, 0, false, ReasonTransport)
	return fmt.Errorf("egress: %w", err)
}

// contextError returns err, or if the context is done, the error that says
// so: a deadline error or a [*CancelledError].
func (c *call) contextError(err error) error {
	switch {
	case c.ctx.Err() == nil:
		return err
	case timedOut(c.ctx):
		return deadlineError(c.ctx, "egress: deadline exceeded in flight")
	default:
		return &CancelledError{Cause: context.Cause(c.ctx)}
	}
}

// endAfter ends a call that stopped with an error after it was handed to
// the transport: a cancellation if the context was cancelled, a failure
// with reason otherwise.
func (c *call) endAfter(status int, reason Reason) {
	switch {
	case c.ctx.Err() == nil:
		c.end(audit.ActionHTTPCall, status, false, reason)
	case timedOut(c.ctx):
		c.end(audit.ActionHTTPCall, status, false, ReasonDeadline)
	default:
		c.end(audit.ActionHTTPCallCancelled, status, false, ReasonCancelledInFlight)
	}
}

// endWithStatus ends a call whose response arrived. early is
// ReasonClosedEarly when the caller closed the body before its end, and
// empty otherwise.
func (c *call) endWithStatus(status int, early Reason) {
	if early != "" && c.ctx.Err() != nil {
		c.endAfter(status, early) // the transfer was torn down by the context
		return
	}
	switch {
	case status >= 200 && status < 300 && early != "":
		c.end(audit.ActionHTTPCall, status, true, early)
	case status >= 200 && status < 300:
		c.end(audit.ActionHTTPCall, status, true, ReasonCompleted)
	case status >= 300 && status < 400:
		c.end(audit.ActionHTTPCall, status, false, ReasonRedirect)
	default:
		c.end(audit.ActionHTTPCall, status, false, ReasonErrorStatus)
	}
}

// timedOut tells a deadline from a cancellation: a context that timed out
// reports DeadlineExceeded as its error or its cause.
func timedOut(ctx context.Context) bool {
	return errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(context.Cause(ctx), context.DeadlineExceeded)
}

func deadlineError(ctx context.Context, msg string) error {
	if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
		return fmt.Errorf("%s: %w (%w)", msg, ctx.Err(), cause)
	}
	return fmt.Errorf("%s: %w", msg, ctx.Err())
}
