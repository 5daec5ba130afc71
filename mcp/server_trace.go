package mcp

import (
	"context"
	"encoding/json"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
)

// incomingTrace is the W3C trace context a client sent with a request:
// in params._meta (SEP-414), which wins, or, over HTTP, in the request's
// traceparent and tracestate headers. A handler's context carries it, as
// a remote parent, so that what the handler traces continues the
// client's trace; a server that traces nothing pays one small decode.
func incomingTrace(ctx context.Context, params json.RawMessage, header http.Header) context.Context {
	var p struct {
		Meta struct {
			Traceparent string `json:"traceparent"`
			Tracestate  string `json:"tracestate"`
		} `json:"_meta"`
	}
	_ = json.Unmarshal(params, &p) // a bad params is the request's to refuse
	carrier := propagation.MapCarrier{}
	if p.Meta.Traceparent != "" {
		carrier["traceparent"] = p.Meta.Traceparent
		if p.Meta.Tracestate != "" {
			carrier["tracestate"] = p.Meta.Tracestate
		}
	} else if tp := header.Get("Traceparent"); tp != "" {
		carrier["traceparent"] = tp
		if ts := header.Get("Tracestate"); ts != "" {
			carrier["tracestate"] = ts
		}
	} else {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, carrier)
}
