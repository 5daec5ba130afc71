package mcp

import "time"

// The transports a [CancelSentFunc] names.
const (
	TransportStdio = "stdio" // a byte stream: a subprocess's stdio, a pipe
	TransportHTTP  = "http"  // Streamable HTTP, stateless or with sessions
	TransportSSE   = "sse"   // HTTP+SSE (2024-11-05)
)

// CancelSentFunc is told that the signal cancelling an interrupted call is
// on the wire, and how long that took: d runs from when the call saw its
// context end (cancelled, or a deadline passed) to when the server was
// told — the notifications/cancelled written to the stream (stdio), its
// POST answered (HTTP with sessions, HTTP+SSE), or the call's response
// stream closed (2026-07-28 HTTP, where that is the whole signal). For a
// call that became a task, d runs to when the server answered its
// tasks/cancel.
// transport is [TransportStdio], [TransportHTTP] or [TransportSSE].
//
// It is not called when there was nothing to signal (the call was
// interrupted before any of it was sent), for the handshake, for calls
// ended by [Client.Close], or when the notification could not be sent.
// It runs on the caller's goroutine or on one of the client's, and must
// not block.
type CancelSentFunc func(transport string, d time.Duration)

// cancelClock starts timing the cancellation of a call: the returned
// function reports it to OnCancelSent. Nil when there is no hook, so that
// a client without one does not even read the clock.
func (c *Client) cancelClock() func() {
	h := c.opts.OnCancelSent
	if h == nil {
		return nil
	}
	start := time.Now()
	return func() { h(c.transportName(), time.Since(start)) }
}

// transportName is how a [CancelSentFunc] names the client's transport.
func (c *Client) transportName() string {
	hc, ok := c.conn.(*httpConn)
	if !ok {
		return TransportStdio
	}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if hc.legacySSE != nil {
		return TransportSSE
	}
	return TransportHTTP
}
