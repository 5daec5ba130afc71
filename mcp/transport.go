package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
)

// A Transport opens a connection to one MCP server. The transports are
// [Command] (a subprocess speaking stdio) and [Stream] (any byte stream, such
// as an in-process pipe). Each knows how its protocol revisions expect a call
// to be cancelled, so the [Client] can send the right signal.
type Transport interface {
	// connect opens the connection. It honours ctx while connecting only:
	// once connect returns, the connection lives until it is closed.
	connect(ctx context.Context, cfg connConfig) (conn, error)
}

// connConfig is what a transport needs from the client.
type connConfig struct {
	pinned revision // ClientOptions.ProtocolVersion; zero if none
	// serverRequests: the client answers server requests (roots,
	// sampling, elicitation) or hears what a server says unasked (list
	// changes, resource updates), so a session's standalone stream is
	// worth opening.
	serverRequests bool
	maxMessageSize int
	logger         *slog.Logger
	receiver       receiver
	// traced: the client traces, so an HTTP request carries its span's
	// trace context in headers.
	traced bool
}

// receiver takes what a connection reads. Its methods are called from the
// connection's reader and must not block on the network.
type receiver interface {
	// receive handles one incoming message.
	receive(m *jsonrpc.Message)
	// receiveWithin handles a message that arrived on the response stream
	// of one request, whose context is ctx: a request from the server
	// there is about that request, so its handler ends when ctx does.
	receiveWithin(ctx context.Context, m *jsonrpc.Message)
	// receiveInvalid handles a frame that is not a valid message. err.ID
	// is set when the frame's id could be read.
	receiveInvalid(err *jsonrpc.DecodeError)
	// fail ends the request id with err: the transport could not deliver
	// it or its response (an HTTP error status, a broken response stream).
	fail(id jsonrpc.ID, err error)
	// lost is called once, when the connection fails or ends. err says why.
	lost(err error)
}

// receiveFrame hands r the message that frame holds, or why it holds none.
func receiveFrame(r receiver, frame []byte) {
	m, err := jsonrpc.Decode(frame)
	if err != nil {
		var de *jsonrpc.DecodeError
		errors.As(err, &de)
		r.receiveInvalid(de)
		return
	}
	r.receive(m)
}

// receiveOversize handles a message longer than MaxMessageSize (limit),
// which the transport skipped unread: the request it answered, id, fails
// alone, and the connection carries on. A message whose id could not be
// found (or that was no response) is dropped, with a warning; a request
// it answered waits on, under its own budget.
func receiveOversize(r receiver, logger *slog.Logger, id jsonrpc.ID, limit int) {
	if !id.IsValid() {
		logger.Warn("mcp: dropped a message from the server longer than MaxMessageSize, naming no request", "limit", limit)
		return
	}
	r.fail(id, &ProtocolError{Reason: fmt.Sprintf("message longer than %d bytes (MaxMessageSize)", limit)})
}

// conn is one open connection. All methods are safe for concurrent use.
type conn interface {
	// start begins reading; the client calls it once it is ready to receive.
	start()

	// send writes m. It returns nil once m is fully written. If ctx ends
	// first it returns early: with an error matching errNotSent when
	// nothing of m reached the wire, or ctx's error when it may have.
	send(ctx context.Context, m *jsonrpc.Message) error

	// abandon gives up on the response to request id: a transport with a
	// response stream per request ends the request's context with cause
	// (which matches context.DeadlineExceeded or context.Canceled: see
	// stopCause), closing its stream. It is a no-op on a byte stream.
	abandon(id jsonrpc.ID, cause error)

	// abandonUnsent abandons request id, with cause, if none of it has
	// reached the wire yet, and reports whether none of it ever will: then
	// the server never saw it, and there is nothing to tell it. A transport
	// that cannot tell returns false and does nothing.
	abandonUnsent(id jsonrpc.ID, cause error) bool

	// notifiesCancel reports whether, on protocol revision rev, a call is
	// cancelled by sending notifications/cancelled (stdio, legacy HTTP)
	// rather than only by abandoning its response stream (2026-07-28 HTTP).
	notifiesCancel(rev revision) bool

	// negotiated tells the connection the protocol revision the handshake
	// settled on, before anything else is sent under it.
	negotiated(rev revision)

	// close ends the connection and releases its resources within a bounded
	// time. While ctx lasts, the peer is let leave by itself (a subprocess
	// its grace periods, a session its DELETE); once ctx has ended, what
	// is left of that is cut to hurriedGrace a leg. It is safe to call more
	// than once.
	close(ctx context.Context) error
}

// aborter is a conn that can be closed without waiting for its peer to
// leave by itself, for an attempt whose handshake failed: the server had its
// chance, and the caller's budget is spent.
type aborter interface{ abort() }

// errNotSent marks a send that ended before any byte went out.
var errNotSent = errors.New("message not sent")
