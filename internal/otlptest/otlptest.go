// Package otlptest is a loopback OTLP/HTTP trace receiver for tests: it
// decodes the real protobuf payload an OTLP exporter sends to /v1/traces
// (go.opentelemetry.io/proto/otlp) and keeps the spans, so that a test can
// assert what arrived over the wire.
package otlptest

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one span as it arrived, flattened.
type Span struct {
	Service      string // the resource's service.name
	Scope        string // the instrumentation scope's name
	Name         string
	TraceID      string // hex
	SpanID       string // hex
	ParentSpanID string // hex; empty for a root
	Kind         tracepb.Span_SpanKind
	Attributes   map[string]string
	Events       []Event
	Links        []string // the span ids linked to, hex
	StatusCode   tracepb.Status_StatusCode
	Start, End   time.Time
}

// Event is one span event.
type Event struct {
	Name       string
	Time       time.Time
	Attributes map[string]string
}

// Receiver is a running receiver. Its zero value is not usable: use
// [Start].
type Receiver struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}

	mu    sync.Mutex
	spans []Span
	bad   []error
	seen  chan struct{} // closed and replaced on every export
}

// Start listens on 127.0.0.1 and serves OTLP/HTTP trace exports.
func Start() (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Receiver{ln: ln, done: make(chan struct{}), seen: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", r.export)
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(r.done)
		_ = r.srv.Serve(ln)
	}()
	return r, nil
}

// Endpoint is the receiver's base URL, for OTEL_EXPORTER_OTLP_ENDPOINT.
func (r *Receiver) Endpoint() string { return "http://" + r.ln.Addr().String() }

// Close stops the receiver.
func (r *Receiver) Close() error {
	err := r.srv.Close()
	<-r.done
	return err
}

// Spans returns the spans received so far, in the order they arrived.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Errors returns the exports that could not be decoded.
func (r *Receiver) Errors() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.bad...)
}

// WaitFor waits until a received span matches, or ctx ends.
func (r *Receiver) WaitFor(ctx context.Context, match func(Span) bool) (Span, error) {
	for {
		r.mu.Lock()
		for _, s := range r.spans {
			if match(s) {
				r.mu.Unlock()
				return s, nil
			}
		}
		seen := r.seen
		r.mu.Unlock()
		select {
		case <-seen:
		case <-ctx.Done():
			return Span{}, fmt.Errorf("otlptest: no matching span among %d: %w", len(r.Spans()), context.Cause(ctx))
		}
	}
}

func (r *Receiver) export(w http.ResponseWriter, req *http.Request) {
	spans, err := decode(req)
	r.mu.Lock()
	if err != nil {
		r.bad = append(r.bad, err)
	}
	r.spans = append(r.spans, spans...)
	close(r.seen)
	r.seen = make(chan struct{})
	r.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	body, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(body)
}

func decode(req *http.Request) ([]Span, error) {
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		return nil, fmt.Errorf("otlptest: Content-Type %q, want application/x-protobuf", ct)
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		body = zr
	}
	raw, err := io.ReadAll(io.LimitReader(body, 64<<20))
	if err != nil {
		return nil, err
	}
	var msg coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &msg); err != nil {
		return nil, fmt.Errorf("otlptest: decoding the export: %w", err)
	}
	var out []Span
	for _, rs := range msg.GetResourceSpans() {
		service := attrs(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{Service: service, Scope: ss.GetScope().GetName(), Name: s.GetName(),
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentSpanID: hex.EncodeToString(s.GetParentSpanId()), Kind: s.GetKind(),
					Attributes: attrs(s.GetAttributes()), StatusCode: s.GetStatus().GetCode(),
					Start: time.Unix(0, int64(s.GetStartTimeUnixNano())), End: time.Unix(0, int64(s.GetEndTimeUnixNano()))}
				for _, e := range s.GetEvents() {
					sp.Events = append(sp.Events, Event{Name: e.GetName(), Time: time.Unix(0, int64(e.GetTimeUnixNano())), Attributes: attrs(e.GetAttributes())})
				}
				for _, l := range s.GetLinks() {
					sp.Links = append(sp.Links, hex.EncodeToString(l.GetSpanId()))
				}
				out = append(out, sp)
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("otlptest: an export with no spans")
	}
	return out, nil
}

// attrs renders attribute values as text.
func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = value(kv.GetValue())
	}
	return m
}

func value(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	}
	return v.String()
}
