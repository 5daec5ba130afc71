package egress_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// A request whose caller traces gets a client span, the child of the
// caller's, naming what its audit row names — and never the credential,
// a header or the query string; the traceparent the caller put on it is
// replaced with the request span's own. A cancel in flight is its own
// outcome, not an error.
func TestARequestOfATracedCallerHasASpan(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var mu sync.Mutex
	var gotTP []string
	release := make(chan struct{})
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotTP = append(gotTP, r.Header.Get("Traceparent"))
		mu.Unlock()
		if r.URL.Path == "/hang" {
			<-release
		}
	})
	defer close(release)
	b.setSecret(t, "token", "span-secret-value", "query:api_key", "127.0.0.1")
	c := b.client(t, b.config("token", "127.0.0.1"))
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ctx, parent := tp.Tracer("t").Start(t.Context(), "caller")
	defer parent.End()

	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.srv.URL+"/v1/items?page=2", nil)
	req.Header.Set("Traceparent", "00-"+parent.SpanContext().TraceID().String()+"-"+parent.SpanContext().SpanID().String()+"-01")
	req.Header.Set("X-Other", "header-secret-value")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()

	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want the request's one", len(spans))
	}
	s := spans[0]
	if s.Name != "GET" || s.SpanKind != trace.SpanKindClient || s.Parent.SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("span %q kind %v parent %v: want GET, client, the caller's child", s.Name, s.SpanKind, s.Parent.SpanID())
	}
	attrs := map[string]string{}
	for _, a := range s.Attributes {
		attrs[string(a.Key)] = a.Value.String()
	}
	for k, want := range map[string]string{"http.request.method": "GET", "server.address": "127.0.0.1", "url.path": "/v1/items",
		"http.response.status_code": "200", "andon.egress.action": "http_call", "andon.outcome": "ok"} {
		if attrs[k] != want {
			t.Errorf("attribute %s = %q, want %q", k, attrs[k], want)
		}
	}
	if all := fmt.Sprint(s.Attributes, s.Events, s.Status); strings.Contains(all, "span-secret-value") || strings.Contains(all, "header-secret-value") || strings.Contains(all, "page=2") {
		t.Errorf("a secret, a header or the query string is in the span: %s", all)
	}
	mu.Lock()
	tp0 := gotTP[0]
	mu.Unlock()
	if want := "00-" + s.SpanContext.TraceID().String() + "-" + s.SpanContext.SpanID().String() + "-01"; tp0 != want {
		t.Errorf("the server got traceparent %q, want the request span's %q", tp0, want)
	}

	// Cancelled in flight.
	cctx, cancel := context.WithCancel(ctx)
	hung, _ := http.NewRequestWithContext(cctx, http.MethodGet, srv.srv.URL+"/hang", nil)
	done := make(chan error, 1)
	go func() {
		resp, err := c.Do(hung)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	for {
		mu.Lock()
		n := len(gotTP)
		mu.Unlock()
		if n == 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	spans = exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans after the cancel, want 2", len(spans))
	}
	s = spans[1]
	attrs = map[string]string{}
	for _, a := range s.Attributes {
		attrs[string(a.Key)] = a.Value.String()
	}
	if attrs["andon.outcome"] != "cancelled" || attrs["andon.egress.action"] != "http_call_cancelled" || s.Status.Code == codes.Error {
		t.Errorf("cancelled request's span: %v, status %+v; want cancelled, http_call_cancelled, no error", attrs, s.Status)
	}
	if len(s.Events) != 1 || s.Events[0].Name != "egress.cancel" {
		t.Errorf("events %v, want egress.cancel", s.Events)
	}
}

// A caller that does not trace gets no span and sends no trace context.
func TestARequestOfAnUntracedCallerHasNoTraceContext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var got string
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { got = r.Header.Get("Traceparent") })
	c := b.client(t, b.config("", "127.0.0.1"))
	resp, err := get(t.Context(), t, c, srv.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got != "" {
		t.Errorf("traceparent %q sent for a caller that does not trace", got)
	}
}
