package egress

import (
	"net"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/andonhq/andon/audit"
)

// tracerName is the instrumentation scope of egress's spans.
const tracerName = "github.com/andonhq/andon/egress"

// startSpan gives a request a client span when its context carries a
// recording one (the caller traces: an MCP request's, a model call's),
// from that span's provider: egress needs no tracing settings of its own,
// and a caller that does not trace costs one context lookup. The span
// names what the audit row names (method, host, the path without its
// query), never a header, a credential or a query string.
func (c *call) startSpan(req *http.Request) {
	parent := trace.SpanFromContext(c.ctx)
	if !parent.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{
		attribute.String("http.request.method", c.entry.Method),
		attribute.String("andon.egress.purpose", c.entry.Purpose),
	}
	if req.URL != nil {
		host, port, err := net.SplitHostPort(req.URL.Host)
		if err != nil {
			host = req.URL.Host
		}
		attrs = append(attrs, attribute.String("server.address", host), attribute.String("url.scheme", req.URL.Scheme),
			attribute.String("url.path", c.entry.Path))
		if p, err := strconv.Atoi(port); err == nil {
			attrs = append(attrs, attribute.Int("server.port", p))
		}
	}
	c.ctx, c.span = parent.TracerProvider().Tracer(tracerName).Start(c.ctx, c.entry.Method,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// propagate replaces the trace context a caller put on out (an MCP
// client that traces) with the request's own span's: the server sees the
// HTTP request as the parent. A request without one gets none: egress
// does not start propagating to a host by itself.
func (c *call) propagate(out *http.Request) {
	if c.span == nil || out.Header.Get("Traceparent") == "" {
		return
	}
	propagation.TraceContext{}.Inject(c.ctx, propagation.HeaderCarrier(out.Header))
}

// endSpan records the request's outcome as its audit row says it: a
// cancel is not an error (andon.outcome "cancelled", with the action),
// a refusal or failure is.
func (c *call) endSpan(action audit.Action, status int, ok bool, reason Reason) {
	if c.span == nil {
		return
	}
	c.span.SetAttributes(attribute.String("andon.egress.action", string(action)), attribute.String("andon.reason", string(reason)))
	if status != 0 {
		c.span.SetAttributes(attribute.Int("http.response.status_code", status))
	}
	switch action {
	case audit.ActionHTTPCallCancelled, audit.ActionHTTPCallCancelledBeforeSend:
		c.span.SetAttributes(attribute.String("andon.outcome", "cancelled"))
		c.span.AddEvent("egress.cancel", trace.WithAttributes(attribute.String("andon.egress.action", string(action))))
	default:
		if ok {
			c.span.SetAttributes(attribute.String("andon.outcome", "ok"))
		} else {
			c.span.SetAttributes(attribute.String("andon.outcome", "failed"))
			c.span.SetStatus(codes.Error, string(reason))
		}
	}
	c.span.End()
}
