package mcptest

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// SilentListener accepts TCP connections on loopback and never writes a
// byte: the server that hangs below HTTP, which a client can only give up
// on. It reads and discards what it is sent, so a client's writes never
// block.
type SilentListener struct {
	ln       net.Listener
	accepted atomic.Int64

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

// NewSilentListener starts a SilentListener on 127.0.0.1.
func NewSilentListener() (*SilentListener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &SilentListener{ln: ln}
	l.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.accepted.Add(1)
			l.mu.Lock()
			l.conns = append(l.conns, c)
			l.mu.Unlock()
			l.wg.Go(func() { io.Copy(io.Discard, c) })
		}
	})
	return l, nil
}

// URL returns an MCP endpoint URL on the listener.
func (l *SilentListener) URL() string { return "http://" + l.ln.Addr().String() + "/mcp" }

// Accepted returns how many connections the listener has accepted.
func (l *SilentListener) Accepted() int64 { return l.accepted.Load() }

// Close stops listening and closes every connection it accepted.
func (l *SilentListener) Close() {
	l.ln.Close()
	l.mu.Lock()
	for _, c := range l.conns {
		c.Close()
	}
	l.mu.Unlock()
	l.wg.Wait()
}
