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
// it to exit, sends SIGTERM, waits TerminateGrace again, then sends SIGKILL;
// [Client.Shutdown] cuts each wait short once its context ends. The server
// runs in its own process group, and the signals go to the whole group.
// The server is the group: once its first process (the one started) has
// exited, however it exited, whatever is left of the group is killed
// (SIGKILL) at once, so a wrapper script's children do not outlive it — a
// child that needs time to clean up must be waited for by its parent, as a
// shell's wait does. The client learns of that exit from the process
// itself: calls in flight fail at once with the exit status (matching
// [ErrClosed]), even while a process outside the group (one that started a
// session of its own) still holds the server's stdout open; what the server
// wrote before it exited is still read. On Windows, which has no such
// signals or groups, a server still running after TerminateGrace is killed
// (TerminateProcess), its own children are not, and an exit is seen only
// when its stdout closes.
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

	p := &process{cmd: cmd, exited: make(chan struct{}), grace: t.TerminateGrace, logger: cfg.logger, stdout: stdoutR}
	if p.grace <= 0 {
		p.grace = DefaultTerminateGrace
	}
	go p.wait()
	p.stderrDone = make(chan struct{})
	go p.forwardStderr(stderrR)

	c := newStreamConn(&serverOutput{f: stdoutR, exited: p.exited}, stdinW, cfg)
	c.direct = nonBlockingWrite(stdinW) // os.Pipe's ends are non-blocking
	c.stopFunc = func(ctx context.Context) {
		stdinW.Close()
		p.stop(ctx, !c.abortive.Load())
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
	cmd    *exec.Cmd
	grace  time.Duration
	logger *slog.Logger
	// exited is closed once the server has exited and been reaped, and
	// the rest of its process group killed.
	exited     chan struct{}
	waitErr    error
	stdout     *os.File // the read end of its stdout, whose reader wait wakes
	stderrDone chan struct{}
}

// wait waits for the server to exit, ends what is left of its process
// group, and wakes the reader of its stdout, which then reads what is left
// in the pipe and ends (see serverOutput): a process that still holds the
// pipe open, a child in a session of its own, must not hide the exit.
func (p *process) wait() {
	p.waitErr = p.cmd.Wait()
	endGroup(p.cmd.Process)
	wakeReader(p.stdout)
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

// stop ends the server, its stdin already closed: each step of escalate (on
// Unix SIGTERM, then SIGKILL, each to the whole process group) comes a
// grace period after the last, unless the server has exited by then. A
// server that is not graceful (its handshake never finished: it had its
// chance) gets the first step at once, so that a budget spent on a server
// that never answered is not followed by a grace period spent waiting for
// it. Once ctx has ended, each wait is cut to hurriedGrace: a caller whose
// budget is spent is not kept for a server that ignores stdin EOF and
// SIGTERM. stop returns once the server has exited and its group is ended.
func (p *process) stop(ctx context.Context, graceful bool) {
	wait := p.grace
	if !graceful {
		wait = 0
	}
	for _, step := range escalate(p.cmd.Process) {
		if p.waitExit(ctx, wait) {
			return
		}
		p.logger.Debug("mcp: server did not exit, signalling", "pid", p.cmd.Process.Pid, "signal", step.signal)
		_ = step.send()
		wait = p.grace
	}
	<-p.exited
}

// waitExit waits up to d for the server to exit, and no more than
// hurriedGrace once ctx has ended; it reports whether the server exited.
func (p *process) waitExit(ctx context.Context, d time.Duration) bool {
	wctx, cancel := teardownContext(ctx, d)
	defer cancel()
	select {
	case <-p.exited:
		return true
	case <-wctx.Done():
		// Both may be ready: an exit at the last moment still counts.
		select {
		case <-p.exited:
			return true
		default:
			return false
		}
	}
}

// serverOutput is the server's stdout as its connection reads it. Once the
// server has exited (wait has woken the reader), a read takes only what is
// already in the pipe, and then reports the end: the response a server
// wrote just before it exited is read, and another process holding the
// pipe open cannot keep the connection waiting for ever.
type serverOutput struct {
	f      *os.File
	exited <-chan struct{}
}

func (o *serverOutput) Read(p []byte) (int, error) {
	select {
	case <-o.exited:
		return readBuffered(o.f, p)
	default:
	}
	n, err := o.f.Read(p)
	if n == 0 && errors.Is(err, os.ErrDeadlineExceeded) {
		// Only wait sets a deadline, just before exited closes.
		<-o.exited
		return readBuffered(o.f, p)
	}
	return n, err
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
