package sqlstore

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracerName is the instrumentation scope of the store's spans.
const tracerName = "github.com/andonhq/andon/sqlstore"

// cancelSpan starts the span of a cancel's guarded UPDATE of run id, when
// the cancel's context carries a recording span (its caller traces), from
// that span's provider: only the cancel path's statements are traced, and
// a store whose caller does not trace pays one context lookup. end records
// whether the statement won; it does nothing when there is no span.
func (s *Store) cancelSpan(ctx context.Context, id string) (end func(won bool, err error)) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return func(bool, error) {}
	}
	system := "sqlite"
	if _, ok := s.d.(*postgres); ok {
		system = "postgresql"
	}
	_, span := parent.TracerProvider().Tracer(tracerName).Start(ctx, "UPDATE runs",
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
			attribute.String("db.system.name", system),
			attribute.String("db.operation.name", "UPDATE"),
			attribute.String("db.collection.name", "runs"),
			attribute.String("andon.run.id", id)))
	return func(won bool, err error) {
		span.SetAttributes(attribute.Bool("andon.cancel.won", won))
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}
