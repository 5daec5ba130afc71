package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// envDelayRelay makes the test binary a delay relay (runDelayRelay): the
// simulated network's links, for kernels without tc netem. Its value is
// "DELAY LISTEN=TARGET LISTEN=TARGET …", e.g. "5ms 10.77.1.1:5432=10.77.4.2:5432".
const envDelayRelay = "ANDON_TEST_DELAY_RELAY"

// delayRelayReady is the line the relay prints once it listens everywhere.
const delayRelayReady = "delay relay ready"

// envRelayLateness names a file to which the relay, if set, writes how late
// it passed each chunk on (after the chunk was due), in percentiles, when it
// stops: the relay's own addition to the link's delay, which is not the
// simulated network's and not andon's.
const envRelayLateness = "ANDON_TEST_RELAY_LATENESS"

// lateness collects how late the relay passed chunks on.
type lateness struct {
	mu   sync.Mutex
	late []time.Duration
}

func (l *lateness) add(d time.Duration) {
	l.mu.Lock()
	l.late = append(l.late, d)
	l.mu.Unlock()
}

// write writes the chunks' count and lateness percentiles to path.
func (l *lateness) write(path string) {
	l.mu.Lock()
	late := slices.Clone(l.late)
	l.mu.Unlock()
	if len(late) == 0 {
		return
	}
	slices.Sort(late)
	at := func(p int) time.Duration { return late[min(len(late)-1, len(late)*p/100)] }
	summary := fmt.Sprintf("chunks %d late p50 %v p90 %v p99 %v max %v\n", len(late), at(50), at(90), at(99), late[len(late)-1])
	if err := os.WriteFile(path, []byte(summary), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "delay relay:", err)
	}
}

// runDelayRelay relays TCP connections from each LISTEN address to its
// TARGET, holding every chunk of bytes for DELAY in each direction before it
// passes it on: a link whose round trip is 2×DELAY, with no bandwidth limit
// and order kept. It serves until its stdin ends (its parent went away), and
// returns the exit status.
func runDelayRelay(spec string) int {
	fields := strings.Fields(spec)
	if len(fields) < 2 {
		fmt.Fprintf(os.Stderr, "delay relay: %s=%q: want DELAY LISTEN=TARGET…\n", envDelayRelay, spec)
		return 2
	}
	delay, err := time.ParseDuration(fields[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "delay relay:", err)
		return 2
	}
	late := &lateness{}
	for _, route := range fields[1:] {
		listen, target, ok := strings.Cut(route, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "delay relay: route %q: want LISTEN=TARGET\n", route)
			return 2
		}
		ln, err := net.Listen("tcp", listen)
		if err != nil {
			fmt.Fprintln(os.Stderr, "delay relay:", err)
			return 1
		}
		go relayAccept(ln, target, delay, late)
	}
	fmt.Println(delayRelayReady)
	io.Copy(io.Discard, bufio.NewReader(os.Stdin))
	if path := os.Getenv(envRelayLateness); path != "" {
		late.write(path)
	}
	return 0
}

func relayAccept(ln net.Listener, target string, delay time.Duration, late *lateness) {
	for {
		c, err := ln.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, "delay relay: accept:", err)
			return
		}
		go relayConn(c.(*net.TCPConn), target, delay, late)
	}
}

// relayConn joins c to a new connection to target through two delayed
// pipes. The TCP handshake itself is not delayed: a new connection costs
// one round trip less than on a real link.
func relayConn(c *net.TCPConn, target string, delay time.Duration, late *lateness) {
	t, err := net.Dial("tcp", target)
	if err != nil {
		fmt.Fprintln(os.Stderr, "delay relay: dial:", err)
		c.Close()
		return
	}
	tc := t.(*net.TCPConn)
	var wg sync.WaitGroup
	wg.Go(func() { delayedPipe(tc, c, delay, late) })
	wg.Go(func() { delayedPipe(c, tc, delay, late) })
	wg.Wait()
	c.Close()
	tc.Close()
}

// chunk is bytes read at one moment, due at the other end at due; eof
// marks the end of the stream (a FIN, passed on as one), err a broken one.
type chunk struct {
	due  time.Time
	data []byte
	eof  bool
	err  error
}

// delayedPipe copies src to dst, each chunk delay after it was read. A
// FIN from src becomes a FIN to dst; a reset or a failed write closes both.
// How late each chunk went out is added to late.
func delayedPipe(dst, src *net.TCPConn, delay time.Duration, late *lateness) {
	chunks := make(chan chunk, 256)
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				chunks <- chunk{due: time.Now().Add(delay), data: buf[:n]}
			}
			if err != nil {
				ch := chunk{due: time.Now().Add(delay), eof: errors.Is(err, io.EOF), err: err}
				chunks <- ch
				return
			}
		}
	}()
	for ch := range chunks {
		if wait := time.Until(ch.due); wait > 0 {
			time.Sleep(wait)
		}
		late.add(time.Since(ch.due))
		switch {
		case ch.eof:
			dst.CloseWrite()
		case ch.err != nil:
			dst.Close()
			src.Close()
		default:
			if _, err := dst.Write(ch.data); err != nil {
				dst.Close()
				src.Close()
			}
		}
	}
}
