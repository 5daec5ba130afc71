package mcp

import (
	"os"
	"os/exec"
)

// isolate does nothing on Windows: the server is stopped by closing its
// stdin, and then by killing the process itself.
func isolate(*exec.Cmd) {}

// escalate returns the steps that stop a server that did not exit when its
// stdin closed. Windows has no SIGTERM for a console program: the one step
// is Process.Kill (TerminateProcess), which does not reach the server's own
// children.
func escalate(p *os.Process) []stopStep {
	return []stopStep{{signal: "kill", send: p.Kill}}
}

// endGroup does nothing on Windows, where the server has no process group.
func endGroup(*os.Process) {}

// wakeReader does nothing on Windows, whose pipes have no deadlines: the
// server's exit is seen when its stdout closes.
func wakeReader(*os.File) {}

// readBuffered is a plain read on Windows (see wakeReader).
func readBuffered(f *os.File, p []byte) (int, error) { return f.Read(p) }
