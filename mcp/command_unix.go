//go:build unix

package mcp

import (
	"os"
	"os/exec"
	"syscall"
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
