package mcp

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
)

// requestBody returns the body of a POST of body, and the context to send
// it under, such that wrote is set once the request may have reached the
// connection.
//
// net/http writes a request whose body is a *bytes.Reader in one write,
// headers and body together; any other body — a reader that notes when it
// is first read — makes it flush the headers first, so each request went
// out in two writes (two segments, and two reads for the server). So over
// net/http's own Transport the body stays a *bytes.Reader and a trace notes
// when the headers have been written (just before the body is, into the
// same buffer). Another RoundTripper may not report to traces, so it still
// gets the reader that notes its first read.
func (c *httpConn) requestBody(ctx context.Context, body []byte, wrote *atomic.Bool) (context.Context, io.Reader) {
	if wrote == nil {
		return ctx, bytes.NewReader(body)
	}
	if c.tracesWrites {
		return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() { wrote.Store(true) }}), bytes.NewReader(body)
	}
	return ctx, &wroteReader{r: bytes.NewReader(body), wrote: wrote}
}

// reportsWrites reports whether rt is net/http's own Transport, which
// calls a request's ClientTrace hooks.
func reportsWrites(rt http.RoundTripper) bool {
	if rt == nil {
		return true // http.DefaultTransport
	}
	_, ok := rt.(*http.Transport)
	return ok
}

// wroteReader is a request body that says when it is first read: by then
// the request is on its way to the server.
type wroteReader struct {
	r     io.Reader
	wrote *atomic.Bool
}

func (w *wroteReader) Read(p []byte) (int, error) {
	w.wrote.Store(true)
	return w.r.Read(p)
}
