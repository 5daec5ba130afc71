package tracing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// ErrUnsupported is returned for an OTEL_* setting that asks for what
// andon does not ship: an exporter other than OTLP, or OTLP over gRPC.
var ErrUnsupported = errors.New("tracing: unsupported setting")

// Tracing is a process's tracing: its provider, and the exporter to
// flush at exit. The zero value, and a nil *Tracing, is tracing off.
type Tracing struct {
	sdk *sdktrace.TracerProvider
}

// FromEnv sets tracing up from the environment (see the package doc).
// service is the service name when OTEL_SERVICE_NAME does not give one
// ("andon serve", say). Tracing off is a Tracing whose Provider is nil,
// and no error. The error is ErrUnsupported for an exporter or protocol
// andon does not ship, or the SDK's for a malformed setting.
func FromEnv(ctx context.Context, service string) (*Tracing, error) {
	return fromEnv(ctx, service, os.Getenv)
}

func fromEnv(ctx context.Context, service string, getenv func(string) string) (*Tracing, error) {
	if !enabled(getenv) {
		return &Tracing{}, nil
	}
	exporter := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))
	if exporter != "" && exporter != "otlp" {
		return nil, fmt.Errorf("%w: OTEL_TRACES_EXPORTER=%q: andon exports traces over OTLP only (otlp, or none)", ErrUnsupported, exporter)
	}
	protocol := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if protocol != "" && protocol != "http/protobuf" {
		return nil, fmt.Errorf("%w: OTLP protocol %q: andon exports over http/protobuf only", ErrUnsupported, protocol)
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: the OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
		resource.WithTelemetrySDK(),
		resource.WithHost(),
		resource.WithProcessPID(),
	)
	if err != nil && res == nil {
		return nil, fmt.Errorf("tracing: the resource: %w", err)
	}
	// No sampler option: the SDK reads OTEL_TRACES_SAMPLER itself.
	return &Tracing{sdk: sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))}, nil
}

// enabled reports whether the environment asks for traces.
func enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	switch strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")) {
	case "none":
		return false
	case "":
	default:
		return true // otlp, or one FromEnv refuses by name
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Provider returns the tracer provider to hand to node.Config and the
// like, or nil when tracing is off.
func (t *Tracing) Provider() trace.TracerProvider {
	if t == nil || t.sdk == nil {
		return nil
	}
	return t.sdk
}

// Enabled reports whether spans are recorded and exported.
func (t *Tracing) Enabled() bool { return t != nil && t.sdk != nil }

// Shutdown flushes the spans not yet exported and stops the exporter,
// within ctx. Call it once, at exit; it does nothing when tracing is off.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	if err := t.sdk.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: flushing spans: %w", err)
	}
	return nil
}
