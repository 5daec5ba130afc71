package main

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// listen listens on serve's --addr. When the port is taken, which is what
// a second serve, or anything else on 7700, meets first, the error says how
// to pick another port and how the other commands then find it.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, nil
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		host, _, _ := net.SplitHostPort(addr)
		other := net.JoinHostPort(host, "7711")
		return nil, fmt.Errorf("cannot serve on %s: address already in use (another andon serve?). "+
			"Pick another port with --addr, e.g. andon serve --addr %s, and point the other commands at it with %s=http://%s or --api",
			addr, other, envAPI, other)
	}
	return nil, fmt.Errorf("cannot serve on %s (--addr): %w", addr, err)
}
