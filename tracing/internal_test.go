package tracing

import "testing"

// Tracing is on only when the environment asks for it.
func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"OTEL_SERVICE_NAME": "x", "OTEL_TRACES_SAMPLER": "always_on"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, false},
		{map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, false},
		{map[string]string{"OTEL_SDK_DISABLED": "TRUE", "OTEL_TRACES_EXPORTER": "otlp"}, false},
		{map[string]string{"OTEL_SDK_DISABLED": "false", "OTEL_TRACES_EXPORTER": "otlp"}, true},
	} {
		if got := enabled(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("enabled(%v) = %v, want %v", tc.env, got, tc.want)
		}
		tr, err := fromEnv(t.Context(), "test", func(k string) string { return tc.env[k] })
		if err != nil {
			t.Fatalf("fromEnv(%v): %v", tc.env, err)
		}
		if (tr.Provider() != nil) != tc.want {
			t.Errorf("fromEnv(%v).Provider() = %v, want on: %v", tc.env, tr.Provider(), tc.want)
		}
		if err := tr.Shutdown(t.Context()); err != nil {
			t.Error(err)
		}
	}
}
