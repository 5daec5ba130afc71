package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
)

// StreamTransport speaks newline-delimited JSON-RPC over a byte stream: one
// end of a pipe or a socket. It is the stdio framing without a subprocess,
// for embedding a server in the same process and for tests.
type StreamTransport struct {
	rwc  io.ReadWriteCloser
	used atomic.Bool
}

// Stream returns a transport over rwc. It can be connected once; closing the
// client closes rwc. For an in-process server, give it one end of
// [net.Pipe] and let the server serve the other.
func Stream(rwc io.ReadWriteCloser) *StreamTransport {
	return &StreamTransport{rwc: rwc}
}

func (t *StreamTransport) connect(ctx context.Context, cfg connConfig) (conn, error) {
	if !t.used.CompareAndSwap(false, true) {
		return nil, errors.New("mcp: a StreamTransport can be connected only once")
	}
	if err := ctx.Err(); err != nil {
		t.rwc.Close()
		return nil, err
	}
	c := newStreamConn(t.rwc, t.rwc, cfg)
	c.closeFunc = t.rwc.Close
	return c, nil
}

// streamConn is a connection over a byte stream. One goroutine writes, in
// the order messages were queued; one reads. A queued message whose sender
// gives up before the writer reaches it is dropped, so nothing of it goes
// out; the caller never waits on a blocked pipe.
type streamConn struct {
	r     io.Reader
	w     io.Writer
	cfg   connConfig
	queue chan *outFrame
	quit  chan struct{} // closed by close: the writer stops
	wrote chan struct{} // closed when the writer has stopped
	read  chan struct{} // closed when the reader has stopped

	// closeFunc closes the underlying stream(s); set before start.
	closeFunc func() error
	// stopFunc, if set, ends the peer (a subprocess) within a bounded
	// time, after the write side is closed and before closeFunc; it
	// hurries once ctx ends (see process.stop).
	stopFunc func(ctx context.Context)
	// abortive is set (by abort) when the peer never finished its
	// handshake: stopFunc need not wait for it to exit by itself.
	abortive  atomic.Bool
	closeErr  error
	closeOnce sync.Once
	lostOnce  sync.Once
	// exitReason, if set, explains why the read side ended (the
	// subprocess's exit status).
	exitReason func() error

	// wmu is held while a frame is being written, by the writer or by a
	// sender writing directly; broken (under wmu) records that a write
	// failed, so that later frames fail without being tried.
	wmu    sync.Mutex
	broken bool
	// direct, if set, writes without ever blocking: all of p, or nothing
	// and errWouldBlock (a pipe write of at most directMax bytes is
	// atomic). Set before start, for a non-blocking pipe.
	direct func(p []byte) (int, error)
}

// errWouldBlock is direct's answer when the pipe has no room.
var errWouldBlock = errors.New("mcp: write would block")

// directMax is the largest frame written directly: POSIX's smallest
// PIPE_BUF (Linux's is 4096), up to which a pipe write is all or nothing.
const directMax = 512

const (
	frameQueued int32 = iota
	frameWriting
	frameDropped
)

type outFrame struct {
	data  []byte
	state atomic.Int32
	done  chan struct{} // closed once written or failed
	err   error
}

func newStreamConn(r io.Reader, w io.Writer, cfg connConfig) *streamConn {
	return &streamConn{
		r: r, w: w, cfg: cfg,
		queue: make(chan *outFrame, 256),
		quit:  make(chan struct{}),
		wrote: make(chan struct{}),
		read:  make(chan struct{}),
	}
}

// flushGrace bounds how long close lets the writer flush what is queued
// (such as the cancellation of calls still in flight) before the stream is
// closed under it.
const flushGrace = 250 * time.Millisecond

func (c *streamConn) start() {
	go c.readLoop()
	go c.writeLoop()
}

func (c *streamConn) send(ctx context.Context, m *jsonrpc.Message) error {
	data, err := jsonrpc.Encode(m)
	if err != nil {
		return fmt.Errorf("%w: encoding: %w", errNotSent, err)
	}
	data = append(data, '\n')
	// The sender writes the frame itself when nothing is queued or being
	// written and the pipe has room: two goroutine hand-offs fewer per
	// message, and the sender still never waits on a blocked pipe.
	if ctx.Err() == nil {
		if written, err := c.tryDirect(data); written {
			return err
		}
	}
	f := &outFrame{data: data, done: make(chan struct{})}
	select {
	case c.queue <- f:
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", errNotSent, ctx.Err())
	case <-c.quit:
		return fmt.Errorf("%w: %w", errNotSent, ErrClosed)
	}
	select {
	case <-f.done:
		return f.err
	case <-c.wrote:
		// The writer stopped; a frame it did not take never will be.
		if f.state.CompareAndSwap(frameQueued, frameDropped) {
			return fmt.Errorf("%w: %w", errNotSent, ErrClosed)
		}
		<-f.done
		return f.err
	case <-ctx.Done():
		if f.state.CompareAndSwap(frameQueued, frameDropped) {
			return fmt.Errorf("%w: %w", errNotSent, ctx.Err())
		}
		return ctx.Err()
	}
}

// tryDirect writes data, a whole frame, from the sender's goroutine if it
// can without waiting: nothing queued or being written, and room in the
// pipe. written false means that nothing went out.
func (c *streamConn) tryDirect(data []byte) (written bool, err error) {
	if c.direct == nil || len(data) > directMax || len(c.queue) != 0 || !c.wmu.TryLock() {
		return false, nil
	}
	return c.writeDirect(data)
}

// sendNow is send when it need not wait (see [directSender]).
func (c *streamConn) sendNow(m *jsonrpc.Message) (written bool, err error) {
	select {
	case <-c.quit:
		return false, nil // closing: send says so
	default:
	}
	if c.direct == nil {
		return false, nil
	}
	data, err := jsonrpc.Encode(m)
	if err != nil {
		return false, nil // send says why
	}
	return c.tryDirect(append(data, '\n'))
}

// writeDirect writes data, a whole frame, from the sender's goroutine; the
// caller holds wmu, which writeDirect releases. written false means that
// nothing went out (the pipe is full) and the frame must be queued.
func (c *streamConn) writeDirect(data []byte) (written bool, err error) {
	select {
	case <-c.quit:
		c.wmu.Unlock()
		return true, fmt.Errorf("%w: %w", errNotSent, ErrClosed)
	default:
	}
	if c.broken {
		c.wmu.Unlock()
		return true, fmt.Errorf("%w: %w", errNotSent, ErrClosed)
	}
	n, err := c.direct(data)
	if n > 0 && n < len(data) && err == nil {
		// Not for a pipe write under PIPE_BUF; finish the frame rather
		// than leave half of it on the wire.
		_, err = c.w.Write(data[n:])
	}
	switch {
	case errors.Is(err, errWouldBlock) && n == 0:
		c.wmu.Unlock()
		return false, nil
	case err != nil:
		c.broken = true
		c.wmu.Unlock()
		err = fmt.Errorf("%w: writing: %w", ErrClosed, err)
		c.lost(err)
		return true, err
	}
	c.wmu.Unlock()
	return true, nil
}

func (c *streamConn) writeLoop() {
	defer close(c.wrote)
	var w frameWriter
	for {
		select {
		case <-c.quit:
			// Flush what is already queued, then stop.
			for {
				select {
				case f := <-c.queue:
					w.write(c, c.gather(f, w.frames[:0]))
				default:
					return
				}
			}
		case f := <-c.queue:
			w.write(c, c.gather(f, w.frames[:0]))
		}
	}
}

// Bounds of one write of queued frames.
const (
	maxBatchFrames = 64
	maxBatchBytes  = 64 << 10
)

// gather returns f and the frames queued behind it, in order, up to the
// bounds of one write.
func (c *streamConn) gather(f *outFrame, frames []*outFrame) []*outFrame {
	frames = append(frames, f)
	size := len(f.data)
	for len(frames) < maxBatchFrames && size < maxBatchBytes {
		select {
		case g := <-c.queue:
			frames = append(frames, g)
			size += len(g.data)
		default:
			return frames
		}
	}
	return frames
}

// frameWriter is the writer goroutine's reusable state.
type frameWriter struct {
	frames, out []*outFrame
	buf         []byte
}

// write writes, in one write, the frames whose senders have not given up
// on them: a storm of cancellations — a hundred calls abandoned at once —
// goes out in a few writes instead of one each, and the server reads it
// in as few. Once a write has failed the stream is broken, and later
// frames fail without being tried.
func (w *frameWriter) write(c *streamConn, frames []*outFrame) {
	defer func() {
		for _, f := range frames {
			close(f.done)
		}
		clear(frames)
		clear(w.out)
		if cap(w.buf) > maxBatchBytes {
			w.buf = nil // a large frame's copy is not kept
		}
	}()
	// wmu first: once a frame counts as writing, no direct write can pass
	// it (a cancellation notification must not overtake its request).
	c.wmu.Lock()
	out := w.out[:0]
	for _, f := range frames {
		if f.state.CompareAndSwap(frameQueued, frameWriting) {
			out = append(out, f)
		}
	}
	w.out = out
	if len(out) == 0 {
		c.wmu.Unlock()
		return
	}
	if c.broken {
		c.wmu.Unlock()
		for _, f := range out {
			f.err = fmt.Errorf("%w: %w", errNotSent, ErrClosed)
		}
		return
	}
	data := out[0].data
	if len(out) > 1 {
		w.buf = w.buf[:0]
		for _, f := range out {
			w.buf = append(w.buf, f.data...)
		}
		data = w.buf
	}
	if _, err := c.w.Write(data); err != nil {
		c.broken = true
		c.wmu.Unlock()
		err = fmt.Errorf("%w: writing: %w", ErrClosed, err)
		for _, f := range out {
			f.err = err
		}
		c.lost(err)
		return
	}
	c.wmu.Unlock()
}

func (c *streamConn) readLoop() {
	defer close(c.read)
	frames := jsonrpc.NewFrameReader(c.r, c.cfg.maxMessageSize)
	for {
		frame, err := frames.Next()
		if err != nil {
			var big *jsonrpc.FrameTooLargeError
			if errors.As(err, &big) {
				receiveOversize(c.cfg.receiver, c.cfg.logger, big.ID, big.Max)
				continue
			}
			reason := err
			if errors.Is(err, io.EOF) {
				reason = errors.New("server closed its output")
			}
			if c.exitReason != nil {
				if exit := c.exitReason(); exit != nil {
					reason = exit
				}
			}
			c.lost(reason)
			return
		}
		receiveFrame(c.cfg.receiver, frame)
	}
}

func (c *streamConn) lost(err error) {
	c.lostOnce.Do(func() { c.cfg.receiver.lost(err) })
}

func (c *streamConn) abandon(jsonrpc.ID, error) {}

// abandonUnsent: a stream's writer queue already tells a request that never
// went out (errNotSent).
func (c *streamConn) abandonUnsent(jsonrpc.ID, error) bool { return false }

func (c *streamConn) notifiesCancel(revision) bool { return true }

func (c *streamConn) negotiated(revision) {}

// abort marks the connection as given up on before its handshake finished,
// so that close does not wait a grace period for the peer.
func (c *streamConn) abort() { c.abortive.Store(true) }

func (c *streamConn) close(ctx context.Context) error {
	c.closeOnce.Do(func() {
		close(c.quit)
		flush := time.NewTimer(flushGrace)
		select {
		case <-c.wrote:
		case <-flush.C:
		}
		flush.Stop()
		if c.stopFunc != nil {
			c.stopFunc(ctx)
		}
		if c.closeFunc != nil {
			c.closeErr = c.closeFunc()
		}
		<-c.wrote
		<-c.read
		c.lost(ErrClosed)
	})
	return c.closeErr
}
