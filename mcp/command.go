package mcp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"time"
)

// DefaultTerminateGrace is how long [CommandTransport] waits for a server to
// exit after closing its stdin, and again after SIGTERM (on Unix), before
// escalating.
const DefaultTerminateGrace = 2 * time.Second

// CommandTransport runs an MCP server as a subprocess and speaks to it over
// its stdin and stdout (the stdio transport). The server's stderr goes to the
// client's logger, line by line, never mixed with protocol data.
//
// Closing the connection closes the server's stdin, waits TerminateGrace for
// it to exit, sends SIGTERM, waits TerminateGrace again, then sends SIGKILL.
// The server runs in its own process group, and the signals go to the whole
// group, so a wrapper script's children do not outlive it. On Windows, which
// has no such signals, a server still running after TerminateGrace is killed
// (TerminateProcess); its own children are not.
type CommandTransport struct {
	// Path is the program to run. A name without a slash is looked up in PATH.
	Path string
	// Args are the arguments, not including the program name.
	Args []string
	// Env is the environment of the server. If nil, it inherits andon's.
	Env []string
	// Dir is the working directory. If empty, it is andon's.
	Dir string
	// TerminateGrace is how long each shutdown step may take. Zero or
	// negative means DefaultTerminateGrace.
	TerminateGrace time.Duration
}

// Command returns a transport that runs the program name with args.
func Command(name string, args ...string) *CommandTransport {
	return &CommandTransport{Path: name, Args: args}
}

func (t *CommandTransport) connect(ctx context.Context, cfg connConfig) (_ conn, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cmd := exec.Command(t.Path, t.Args...)
	cmd.Env, cmd.Dir = t.Env, t.Dir
	isolate(cmd)

	// Pipes of our own, handed to the child as files: exec copies nothing,
	// and Wait never closes the ends we read from.
	var files []*os.File
	defer func() {
		if err != nil {
			for _, f := range files {
				f.Close()
			}
		}
	}()
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	stdinR, stdinW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("mcp: starting %s: %w", t.Path, err)
	}
	stdoutR, stdoutW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("mcp: starting %s: %w", t.Path, err)
	}
	stderrR, stderrW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("mcp: starting %s: %w", t.Path, err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderrW
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("mcp: starting %s: %w", t.Path, err)
	}
	// The child holds its ends now.
	stdinR.Close()
	stdoutW.Close()
	stderrW.Close()

	p := &process{cmd: cmd, exited: make(chan struct{}), grace: t.TerminateGrace, logger: cfg.logger}
	if p.grace <= 0 {
		p.grace = DefaultTerminateGrace
	}
	go p.wait()
	p.stderrDone = make(chan struct{})
	go p.forwardStderr(stderrR)

	c := newStreamConn(stdoutR, stdinW, cfg)
	c.direct = nonBlockingWrite(stdinW) // os.Pipe's ends are non-blocking
	c.stopFunc = func() {
		stdinW.Close()
		p.stop(!c.abortive.Load())
	}
	c.closeFunc = func() error {
		stdoutR.Close()
		// The server is gone; give its last stderr lines a moment, then
		// close the pipe in case a stray grandchild still holds it open.
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-p.stderrDone:
		case <-t.C:
		}
		t.Stop()
		stderrR.Close()
		<-p.stderrDone
		return nil
	}
	c.exitReason = p.exitReason
	return c, nil
}

// process is a running server subprocess.
type process struct {
	cmd        *exec.Cmd
	grace      time.Duration
	logger     *slog.Logger
	exited     chan struct{} // closed when Wait returns
	waitErr    error
	stderrDone chan struct{}
}

func (p *process) wait() {
	p.waitErr = p.cmd.Wait()
	close(p.exited)
}

// exitReason describes how the server exited, if it has exited or does so
// shortly: the read side usually ends a moment before Wait returns.
func (p *process) exitReason() error {
	t := time.NewTimer(100 * time.Millisecond)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
		return nil
	}
	if p.waitErr != nil {
		return fmt.Errorf("server exited: %w", p.waitErr)
	}
	return errors.New("server exited")
}

// stop ends the server within a grace period per escalation step plus a
// moment: its stdin is already closed; then each step of escalate (on Unix
// SIGTERM, then SIGKILL, each to the whole process group), a grace period
// apart. A server that is not graceful (its handshake never finished: it had
// its chance) gets the first step at once, so that a budget spent on a
// server that never answered is not followed by a grace period spent
// waiting for it.
func (p *process) stop(graceful bool) {
	t := time.NewTimer(p.grace)
	if !graceful {
		t.Reset(0)
	}
	defer t.Stop()
	for _, step := range escalate(p.cmd.Process) {
		select {
		case <-p.exited:
			return
		case <-t.C:
		}
		p.logger.Debug("mcp: server did not exit, signalling", "pid", p.cmd.Process.Pid, "signal", step.signal)
		_ = step.send()
		t.Reset(p.grace)
	}
	<-p.exited
}

// stopStep is one step of stopping a server that has not exited.
type stopStep struct {
	signal string // what the step sends, for the log
	send   func() error
}

// forwardStderr logs the server's stderr line by line. Since 2025-11-25 the
// spec says stderr output is not an error, so it is logged at info level.
func (p *process) forwardStderr(r *os.File) {
	defer close(p.stderrDone)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		p.logger.Info("mcp: server stderr", "pid", p.cmd.Process.Pid, "line", sc.Text())
	}
	// A line longer than the buffer ends the scan; keep draining so the
	// server never blocks on a full stderr pipe.
	_, _ = io.Copy(io.Discard, r)
}
