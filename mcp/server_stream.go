package mcp

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
)

// ServeStream serves one client over a byte stream in MCP's stdio framing
// (one JSON-RPC message per line): r is what the client writes, w what it
// reads — os.Stdin and os.Stdout for a server a client spawns. Requests are
// served concurrently; notifications/cancelled ends the context of the
// request it names, and the end of r (the client closed its end, or
// exited) ends every request still in flight with [ErrClientGone].
//
// ServeStream returns once r has ended, ctx is done or the server is
// closed, and the handlers of its requests have returned. It returns nil
// at the end of r. A read of r in progress when ctx ends is left to end
// with r.
func (s *Server) ServeStream(ctx context.Context, r io.Reader, w io.Writer) error {
	ss := newServerSession(s, ctx, "stdio")
	var wmu sync.Mutex
	write := func(m *jsonrpc.Message) error {
		data, err := jsonrpc.Encode(m)
		if err != nil {
			return err
		}
		wmu.Lock()
		defer wmu.Unlock()
		_, err = w.Write(append(data, '\n'))
		return err
	}
	ss.notify = write // before the session is tracked: NotifyToolsChanged reads it
	if !s.track(ss) {
		return ErrServerClosed
	}
	defer s.untrack(ss)

	frames := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		fr := jsonrpc.NewFrameReader(r, s.opts.MaxMessageSize)
		for {
			f, err := fr.Next()
			var tooLarge *jsonrpc.FrameTooLargeError
			if errors.As(err, &tooLarge) {
				s.logger.Warn("mcp: a client's message is over the size limit; skipped", "session", ss.id, "limit", s.opts.MaxMessageSize)
				continue
			}
			if err != nil {
				readErr <- err
				return
			}
			select {
			case frames <- append([]byte(nil), f...):
			case <-ss.ctx.Done():
				return
			}
		}
	}()

	var err error
loop:
	for {
		select {
		case f := <-frames:
			s.serveFrame(ctx, ss, f, write)
		case rerr := <-readErr:
			if !errors.Is(rerr, io.EOF) {
				err = rerr
			}
			ss.end(ErrClientGone)
			break loop
		case <-ctx.Done():
			ss.end(ErrClientGone)
			break loop
		case <-ss.ctx.Done(): // the server closed
			break loop
		}
	}
	ss.handlers.Wait()
	return err
}

// serveFrame acts on one frame of a stream: a request is served on a
// goroutine of its own, with ctx's values, its response written when it
// has one.
func (s *Server) serveFrame(ctx context.Context, ss *serverSession, frame []byte, write serverOut) {
	m, err := jsonrpc.Decode(frame)
	if err != nil {
		e := &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: err.Error()}
		var de *jsonrpc.DecodeError
		if errors.As(err, &de) && de.ID.IsValid() {
			_ = write(&jsonrpc.Message{ID: de.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: err.Error()}})
			return
		}
		_ = write(&jsonrpc.Message{Error: e})
		return
	}
	if !m.IsRequest() {
		ss.receive(m)
		return
	}
	rctx, _, finish := ss.begin(incomingTrace(ctx, m.Params, nil), m)
	go func() {
		defer finish()
		if resp := ss.serve(rctx, m, write); resp != nil {
			_ = write(resp) // a client that went away is not waiting for it
		}
	}()
}
