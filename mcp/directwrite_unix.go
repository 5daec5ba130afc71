//go:build unix

package mcp

import (
	"os"
	"syscall"
)

// nonBlockingWrite returns a write to f, a non-blocking pipe, that makes
// one write(2) and never waits for room: it returns errWouldBlock when
// there is none. Calls must not overlap (streamConn makes them under wmu),
// so that one closure, made here, serves them all without an allocation
// per write. Nil if f offers no raw access.
func nonBlockingWrite(f *os.File) func(p []byte) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	var (
		buf  []byte
		n    int
		werr error
	)
	write := func(fd uintptr) bool {
		n, werr = syscall.Write(int(fd), buf)
		return true // never wait: the caller queues the frame instead
	}
	return func(p []byte) (int, error) {
		buf = p
		err := rc.Write(write)
		buf = nil
		switch {
		case err != nil:
			return 0, err
		case werr == syscall.EAGAIN:
			return 0, errWouldBlock
		case n < 0:
			return 0, werr
		}
		return n, werr
	}
}
