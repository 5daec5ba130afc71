package mcp

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracerName is the instrumentation scope of the client's spans.
const tracerName = "github.com/andonhq/andon/mcp"

// The span attributes and events the client records, after the MCP
// semantic conventions (mcp.*, gen_ai.*, jsonrpc.*) and andon's own
// (andon.*) for what the conventions do not name: how a call was stopped.
const (
	attrMethod        = attribute.Key("mcp.method.name")
	attrSession       = attribute.Key("mcp.session.id")
	attrProtocol      = attribute.Key("mcp.protocol.version")
	attrResourceURI   = attribute.Key("mcp.resource.uri")
	attrTool          = attribute.Key("gen_ai.tool.name")
	attrPrompt        = attribute.Key("gen_ai.prompt.name")
	attrOperation     = attribute.Key("gen_ai.operation.name")
	attrRequestID     = attribute.Key("jsonrpc.request.id")
	attrNetTransport  = attribute.Key("network.transport")
	attrErrorType     = attribute.Key("error.type")
	attrRPCStatusCode = attribute.Key("rpc.response.status_code")
	attrOutcome       = attribute.Key("andon.outcome")
	attrCancelCause   = attribute.Key("andon.cancel.cause")
	attrCancelReason  = attribute.Key("andon.cancel.reason")
	attrCancelSignal  = attribute.Key("andon.cancel.signal")
	attrCancelLatency = attribute.Key("andon.cancel.latency_ms")

	// EventCancel is the event on a request's span when the request is
	// abandoned; EventCancelSent when its signal is on the wire.
	eventCancel     = "mcp.cancel"
	eventCancelSent = "mcp.cancel.sent"
)

// The signals an abandoned request's span names (andon.cancel.signal).
const (
	signalNotification = "notifications/cancelled"
	signalStreamClosed = "stream closed"
)

// reqSpan is the span of one request. Its end may wait for the request's
// cancellation signal, which can go out after the caller has its error:
// refs counts the request and a signal on its way, and whoever drops it
// to zero ends the span.
type reqSpan struct {
	span trace.Span
	refs atomic.Int32
	// cancelStart is when the request saw it was interrupted.
	cancelStart time.Time
}

// startSpan starts the span of a request of method with params, a child
// of ctx's span, and returns ctx carrying it. Nil when the client does
// not trace.
func (c *Client) startSpan(ctx context.Context, method string, params requestParams) (context.Context, *reqSpan) {
	name, target := method, attribute.KeyValue{}
	switch p := params.(type) {
	case *callToolParams:
		name, target = method+" "+p.Name, attrTool.String(p.Name)
	case *getPromptParams:
		name, target = method+" "+p.Name, attrPrompt.String(p.Name)
	case *readResourceParams:
		target = attrResourceURI.String(redactedURI(p.URI))
	}
	// The sampler sees the method; the rest is set only on a span that
	// records, so an unsampled request costs little more than its name.
	ctx, span := c.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrMethod.String(method)))
	s := &reqSpan{span: span}
	s.refs.Store(1)
	if !span.IsRecording() {
		return ctx, s
	}
	attrs := make([]attribute.KeyValue, 0, 6)
	if target.Valid() {
		attrs = append(attrs, target)
	}
	if _, ok := params.(*callToolParams); ok {
		attrs = append(attrs, attrOperation.String("execute_tool"))
	}
	if c.rev.name != "" {
		attrs = append(attrs, attrProtocol.String(c.rev.name))
	}
	if hc, ok := c.conn.(*httpConn); ok {
		attrs = append(attrs, attrNetTransport.String("tcp"))
		if sid := hc.session(); sid != "" {
			attrs = append(attrs, attrSession.String(sid))
		}
	} else {
		attrs = append(attrs, attrNetTransport.String("pipe"))
	}
	span.SetAttributes(attrs...)
	return ctx, s
}

// redactedURI is a resource URI without its query string, which may carry
// a secret.
func redactedURI(uri string) string {
	for i := 0; i < len(uri); i++ {
		if uri[i] == '?' || uri[i] == '#' {
			return uri[:i]
		}
	}
	return uri
}

// withTrace adds the span's traceparent and tracestate to meta (a new
// one if nil) and returns it.
func (s *reqSpan) withTrace(ctx context.Context, meta *requestMeta) *requestMeta {
	if s == nil || !s.span.SpanContext().IsValid() {
		return meta
	}
	if meta == nil {
		meta = &requestMeta{}
	}
	propagation.TraceContext{}.Inject(ctx, metaCarrier{meta})
	return meta
}

// metaCarrier carries the W3C fields in a request's _meta.
type metaCarrier struct{ m *requestMeta }

func (c metaCarrier) Get(key string) string {
	t := c.m.traceMeta
	switch {
	case t == nil:
	case key == "traceparent":
		return t.Traceparent
	case key == "tracestate":
		return t.Tracestate
	}
	return ""
}

func (c metaCarrier) Set(key, value string) {
	if c.m.traceMeta == nil {
		c.m.traceMeta = &traceMeta{}
	}
	switch key {
	case "traceparent":
		c.m.Traceparent = value
	case "tracestate":
		c.m.Tracestate = value
	}
}

func (c metaCarrier) Keys() []string { return []string{"traceparent", "tracestate"} }

// sent records the JSON-RPC id of a round of the request.
func (s *reqSpan) sent(id int64) {
	if s != nil && s.span.IsRecording() {
		s.span.SetAttributes(attrRequestID.String(strconv.FormatInt(id, 10)))
	}
}

// abandoned records that the request was interrupted and how its server
// will be told (signal). callerCtx says whose end it was: the caller's
// (cancelled, or its deadline) or the request's own timeout.
func (s *reqSpan) abandoned(callerCtx context.Context, signal string) {
	if s == nil {
		return
	}
	s.cancelStart = time.Now()
	attrs := []attribute.KeyValue{attrCancelSignal.String(signal)}
	switch err := callerCtx.Err(); {
	case err == nil:
		attrs = append(attrs, attrCancelCause.String("timeout"))
	case errors.Is(err, context.DeadlineExceeded):
		attrs = append(attrs, attrCancelCause.String("deadline"))
	default:
		attrs = append(attrs, attrCancelCause.String("caller"))
	}
	if cause := context.Cause(callerCtx); cause != nil && cause != callerCtx.Err() {
		attrs = append(attrs, attrCancelReason.String(cause.Error()))
	}
	s.span.AddEvent(eventCancel, trace.WithAttributes(attrs...))
}

// signalled records that the abandoned request's signal is on the wire,
// with how long that took since the request saw it was interrupted.
func (s *reqSpan) signalled(signal string) {
	if s == nil {
		return
	}
	d := time.Since(s.cancelStart)
	s.span.AddEvent(eventCancelSent, trace.WithAttributes(
		attrCancelSignal.String(signal),
		attrCancelLatency.Float64(float64(d.Nanoseconds())/1e6)))
}

// hold keeps the span open for a signal on its way; release lets it end.
func (s *reqSpan) hold() {
	if s != nil {
		s.refs.Add(1)
	}
}

func (s *reqSpan) release() {
	if s != nil && s.refs.Add(-1) == 0 {
		s.span.End()
	}
}

// finish records how the request ended, and ends the span unless a
// signal is still on its way. A cancelled request is not an error: its
// status stays unset and andon.outcome says "cancelled" (OpenTelemetry
// has no status for it, and an error status would put every stop among
// the failures).
func (s *reqSpan) finish(err error) {
	if s == nil {
		return
	}
	var rpcErr *RPCError
	switch {
	case err == nil:
		s.span.SetAttributes(attrOutcome.String("ok"))
	case errors.Is(err, ErrCancelled):
		s.span.SetAttributes(attrOutcome.String("cancelled"))
	case errors.Is(err, ErrTimeout):
		s.span.SetAttributes(attrOutcome.String("timed out"), attrErrorType.String("timeout"))
		s.span.SetStatus(codes.Error, "timed out")
	case errors.As(err, &rpcErr):
		code := strconv.FormatInt(rpcErr.Code, 10)
		s.span.SetAttributes(attrOutcome.String("error"), attrErrorType.String(code), attrRPCStatusCode.String(code))
		s.span.SetStatus(codes.Error, rpcErr.Message)
	default:
		s.span.SetAttributes(attrOutcome.String("error"), attrErrorType.String("_OTHER"))
		s.span.SetStatus(codes.Error, err.Error())
	}
	s.release()
}

// injectHeaders puts the W3C trace context of ctx's span in h, the
// headers of an HTTP request.
func injectHeaders(ctx context.Context, h propagation.HeaderCarrier) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		propagation.TraceContext{}.Inject(ctx, h)
	}
}
