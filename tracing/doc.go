// Package tracing sets up a process's OpenTelemetry traces from the
// standard environment, the way every OpenTelemetry SDK reads it, and is
// off when nothing asks for it.
//
// [FromEnv] exports spans over OTLP/HTTP (protobuf) when
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set,
// or OTEL_TRACES_EXPORTER is "otlp"; the exporter reads the rest of
// OTEL_EXPORTER_OTLP_* itself (headers, timeout, compression, TLS). The
// sampler is OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG (default:
// parentbased_always_on), the resource OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES. OTEL_SDK_DISABLED=true, OTEL_TRACES_EXPORTER=none
// or no endpoint at all leave tracing off: the provider is nil, which
// every andon package takes as "no spans, no propagation, no cost".
//
// It keeps no global state: the provider goes where it is needed
// (node.Config, mcp.ClientOptions, agent.Config) rather than into
// otel.SetTracerProvider.
package tracing
