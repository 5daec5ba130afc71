//go:build unix

package mcp

import (
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// isolate starts the server in a process group of its own, so that the
// signals that stop it reach a wrapper script's children too.
func isolate(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// escalate returns the steps that stop a server that did not exit when its
// stdin closed: SIGTERM, then SIGKILL, each to its whole process group.
func escalate(p *os.Process) []stopStep {
	group := func(sig syscall.Signal) stopStep {
		return stopStep{signal: sig.String(), send: func() error { return syscall.Kill(-p.Pid, sig) }}
	}
	return []stopStep{group(syscall.SIGTERM), group(syscall.SIGKILL)}
}

// endGroup kills what is left of the process group of p, a server that has
// just exited and been reaped. While the group has a member its id cannot
// be taken by another process; once it has none, the signal finds nobody.
func endGroup(p *os.Process) {
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
}

// wakeReader ends a read of f that is waiting for data: it returns
// os.ErrDeadlineExceeded (os.Pipe's ends are pollable).
func wakeReader(f *os.File) {
	_ = f.SetReadDeadline(time.Now())
}

// readBuffered reads what f, the non-blocking read end of a pipe, holds
// now, without waiting for more: io.EOF when it is empty, whoever still
// holds the write end.
func readBuffered(f *os.File, p []byte) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var (
		n    int
		rerr error
	)
	// Control, not Read: it ignores the deadline that woke the reader.
	if err := rc.Control(func(fd uintptr) {
		for {
			n, rerr = syscall.Read(int(fd), p)
			if rerr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return 0, err
	}
	switch {
	case rerr == syscall.EAGAIN:
		return 0, io.EOF
	case rerr != nil:
		return 0, rerr
	case n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	return n, nil
}
