package tracing_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/andonhq/andon/internal/otlptest"
	"github.com/andonhq/andon/tracing"
)

func receiver(t *testing.T) *otlptest.Receiver {
	t.Helper()
	r, err := otlptest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// With an endpoint set, spans go over OTLP/HTTP protobuf, with the service
// name from OTEL_SERVICE_NAME, and Shutdown flushes them.
func TestFromEnvExportsOverOTLPHTTP(t *testing.T) {
	r := receiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.Endpoint())
	t.Setenv("OTEL_SERVICE_NAME", "traced-test")
	tr, err := tracing.FromEnv(t.Context(), "default-name")
	if err != nil {
		t.Fatal(err)
	}
	_, span := tr.Provider().Tracer("t").Start(t.Context(), "one span")
	span.End()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	got := r.Spans()
	if len(got) != 1 || got[0].Name != "one span" || got[0].Service != "traced-test" {
		t.Fatalf("received %+v, want the one span of service traced-test (errors: %v)", got, r.Errors())
	}
}

// OTEL_TRACES_SAMPLER is the SDK's: always_off exports nothing.
func TestFromEnvHonoursTheSampler(t *testing.T) {
	r := receiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.Endpoint())
	t.Setenv("OTEL_TRACES_SAMPLER", "always_off")
	tr, err := tracing.FromEnv(t.Context(), "x")
	if err != nil {
		t.Fatal(err)
	}
	_, span := tr.Provider().Tracer("t").Start(t.Context(), "dropped")
	if span.IsRecording() {
		t.Error("always_off: the span is recording")
	}
	span.End()
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := r.Spans(); len(got) != 0 {
		t.Fatalf("always_off exported %d spans", len(got))
	}
}

// An exporter or protocol andon does not ship is refused by name, not
// silently replaced.
func TestFromEnvRefusesWhatItDoesNotShip(t *testing.T) {
	for k, v := range map[string]string{"OTEL_TRACES_EXPORTER": "zipkin", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"} {
		t.Run(k, func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
			t.Setenv(k, v)
			if _, err := tracing.FromEnv(t.Context(), "x"); !errors.Is(err, tracing.ErrUnsupported) {
				t.Fatalf("FromEnv with %s=%s: %v, want ErrUnsupported", k, v, err)
			}
		})
	}
}

// Off: a nil provider, and Shutdown does nothing.
func TestFromEnvOff(t *testing.T) {
	t.Setenv("OTEL_SDK_DISABLED", "true")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	tr, err := tracing.FromEnv(t.Context(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if tr.Provider() != nil || tr.Enabled() {
		t.Fatal("OTEL_SDK_DISABLED=true: tracing is on")
	}
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
}
