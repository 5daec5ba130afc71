package agent

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracerName is the instrumentation scope of the runtime's spans.
const tracerName = "github.com/andonhq/andon/agent"

// The attributes and events of the runtime's spans. gen_ai.* follow the
// OpenTelemetry GenAI conventions; andon.* say what they do not: which
// run, and how a stop happened.
const (
	attrRunID         = attribute.Key("andon.run.id")
	attrAttempt       = attribute.Key("andon.run.attempt")
	attrRound         = attribute.Key("andon.run.round")
	attrOperation     = attribute.Key("gen_ai.operation.name")
	attrToolName      = attribute.Key("gen_ai.tool.name")
	attrToolCallID    = attribute.Key("gen_ai.tool.call.id")
	attrOutcome       = attribute.Key("andon.outcome")
	attrReason        = attribute.Key("andon.reason")
	attrCancelCause   = attribute.Key("andon.cancel.cause")
	attrCancelBy      = attribute.Key("andon.cancel.by")
	attrCancelWon     = attribute.Key("andon.cancel.won")
	attrCancelLatency = attribute.Key("andon.cancel.latency_ms")
	attrCancelCalls   = attribute.Key("andon.cancel.calls")
	attrCancelSource  = attribute.Key("andon.cancel.source")

	// EventCancelRequested: a cancel was asked for (on the cancel's span).
	EventCancelRequested = "andon.cancel.requested"
	// EventCancelRowWritten: the guarded UPDATE moved the row to cancelled.
	EventCancelRowWritten = "andon.cancel.row_written"
	// EventCancelSignal: the run's context was cancelled in this process
	// (on the cancel's span, and on the run's and the call's spans).
	EventCancelSignal = "andon.cancel.signal"
)

// The causes of a stop (andon.cancel.cause).
const (
	CauseOperator = "operator" // an operator or API client cancelled the run
	CauseCaller   = "caller"   // the caller waiting on a direct call went away
	CauseDeadline = "deadline" // the run's own time limit passed
)

type cancelCauseKey struct{}

// withCancelCause marks ctx's cancels as made for cause.
func withCancelCause(ctx context.Context, cause string) context.Context {
	return context.WithValue(ctx, cancelCauseKey{}, cause)
}

func cancelCauseOf(ctx context.Context) string {
	if c, ok := ctx.Value(cancelCauseKey{}).(string); ok {
		return c
	}
	return CauseOperator
}

// startSpan starts a span of the runtime if it traces; otherwise it
// returns ctx and nil, and the span helpers below do nothing.
func (rt *Runtime) startSpan(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if rt.tracer == nil {
		return ctx, nil
	}
	return rt.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// endRunSpan records how a segment of a run ended. A cancelled run is not
// an error: its status stays unset, andon.outcome says "cancelled".
func endRunSpan(span trace.Span, ctx context.Context, err error) {
	if span == nil {
		return
	}
	var stopped *errStop
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, ErrRunCancelled) || errors.As(err, &stopped) && stopped == stopCancelled:
		span.SetAttributes(attrOutcome.String("cancelled"))
	case errors.Is(cause, ErrRunDeadline):
		span.SetAttributes(attrOutcome.String("failed"), attrReason.String(string(ReasonDeadline)), attrCancelCause.String(CauseDeadline))
		span.SetStatus(codes.Error, "the run took longer than its limit")
	case errors.Is(cause, ErrLeaseLost):
		span.SetAttributes(attrOutcome.String("lease lost"))
	case errors.As(err, &stopped):
		span.SetAttributes(attrOutcome.String(stopped.why))
	case err == nil:
		span.SetAttributes(attrOutcome.String("ok"))
	default:
		span.SetAttributes(attrOutcome.String("failed"))
		span.SetStatus(codes.Error, "the run failed")
	}
	span.End()
}

// signalled is the span of a context a cancel ended; call: a tool call's.
type signalled struct {
	span trace.Span
	call bool
}

// signalSpans adds the cancel's signal event to every recording span of
// the contexts a cancel just ended, and links a tool call's to the span of
// the cancel (from, when the cancel was made in this process). A run's
// span is linked when its segment ends, from the row (linkCancel),
// wherever the cancel was made.
func signalSpans(spans []signalled, from trace.SpanContext, source string, at time.Time) {
	seen := make(map[trace.SpanID]bool, len(spans))
	for _, s := range spans {
		id := s.span.SpanContext().SpanID()
		if seen[id] {
			continue
		}
		seen[id] = true
		s.span.AddEvent(EventCancelSignal, trace.WithTimestamp(at), trace.WithAttributes(attrCancelSource.String(source)))
		if from.IsValid() && s.call {
			s.span.AddLink(trace.Link{SpanContext: from, Attributes: []attribute.KeyValue{attribute.String("andon.link", "cancelled by")}})
		}
	}
}

// startCancelSpan starts the span of a cancel of run runID, with its
// requested event. Nil when not tracing.
func (rt *Runtime) startCancelSpan(ctx context.Context, runID string) (context.Context, trace.Span) {
	if rt.tracer == nil {
		return ctx, nil
	}
	cause := cancelCauseOf(ctx)
	ctx, span := rt.tracer.Start(ctx, "cancel run", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attrRunID.String(runID), attrCancelCause.String(cause)))
	span.AddEvent(EventCancelRequested, trace.WithAttributes(attrCancelCause.String(cause)))
	return ctx, span
}

// rowWritten records on a cancel's span what its guarded UPDATE did: if
// it won, the row's write, with how long after the cancel began (start,
// the wall clock's). A statement that lost wrote nothing: the cancel goes
// the ordinary way, or fails.
func rowWritten(span trace.Span, by Actor, won bool, start time.Time) {
	if span == nil {
		return
	}
	span.SetAttributes(attrCancelBy.String(by.ID), attrCancelWon.Bool(won))
	if !won {
		return
	}
	span.AddEvent(EventCancelRowWritten, trace.WithAttributes(attrCancelWon.Bool(won),
		attrCancelLatency.Float64(float64(time.Since(start).Nanoseconds())/1e6)))
}

// signalled records on the cancel's span (ctx's) that this process's
// contexts of the run were cancelled, and links it to their spans.
func (rt *Runtime) signalled(ctx context.Context, spans []signalled) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.AddEvent(EventCancelSignal, trace.WithAttributes(attrCancelCalls.Int(len(spans)), attrCancelSource.String("in process")))
	for _, s := range spans {
		span.AddLink(trace.Link{SpanContext: s.span.SpanContext(), Attributes: []attribute.KeyValue{attribute.String("andon.link", "cancelled")}})
	}
}

// endCancelSpan ends a cancel's span: an error only if the cancel failed
// (a finished run, a refusal).
func endCancelSpan(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// TraceParent returns the W3C traceparent of ctx's span, or "" if ctx
// has none (tracing is off): what a store writes beside a run it inserts
// ([Run].Trace) or cancels ([Run].CancelTrace).
func TraceParent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}

// spanContextOf parses a traceparent that TraceParent wrote.
func spanContextOf(traceparent string) trace.SpanContext {
	if traceparent == "" {
		return trace.SpanContext{}
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
	return trace.SpanContextFromContext(ctx)
}

// runTraceParent makes the span that submitted run (Run.Trace) the parent
// of its segment's span, unless ctx has a span already (a direct call's
// caller's): so every segment of a run, a resumed one in another process
// included, is in the trace its submission began.
func (rt *Runtime) runTraceParent(ctx context.Context, run *Run) context.Context {
	if rt.tracer == nil || trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	if sc := spanContextOf(run.Trace); sc.IsValid() {
		return trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	return ctx
}

// linkCancel links a cancelled segment's span to the span of the cancel,
// read from the run's row (Run.CancelTrace): a cancel made in another
// process (serve's API, while a worker held the run) shows beside the
// run's trace. One read, only when tracing, only for a cancelled segment.
func (rt *Runtime) linkCancel(span trace.Span, runID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	run, err := rt.cfg.Store.RunGet(ctx, runID)
	if err != nil {
		rt.logger.Debug("agent: reading the run's cancel trace", "run", runID, "error", err)
		return
	}
	if sc := spanContextOf(run.CancelTrace); sc.IsValid() && sc.SpanID() != span.SpanContext().SpanID() {
		span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("andon.link", "cancelled by")}})
		span.SetAttributes(attribute.String("andon.cancel.trace_id", sc.TraceID().String()))
	}
}
