package loadtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/andonhq/andon/mcp/mcptest"
)

// ServeEnv, set in a process's environment, makes [MaybeServe] run the
// mcptest server with the process's arguments instead of the program.
const ServeEnv = "ANDON_LOADTEST_MCPTEST"

// MaybeServe runs the mcptest server and exits, if this process was
// started as one (ServeEnv is set); otherwise it returns at once. Call it
// first in main or TestMain.
func MaybeServe() {
	if os.Getenv(ServeEnv) == "" {
		return
	}
	// SIGTERM (how the harness stops an HTTP server) ends ctx, so that
	// the server closes and its record file gets every record.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := mcptest.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// serverCommand is the command line of a stdio mcptest server recording
// to record.
func serverCommand(record string) ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("loadtest: finding this executable to run mcptest: %w", err)
	}
	return []string{exe, "-record", record}, nil
}

// httpServer is an mcptest server serving HTTP on loopback, in a process
// of its own.
type httpServer struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{}
}

// startHTTPServer starts an mcptest HTTP server recording to record and
// returns once it has printed its URL.
func startHTTPServer(ctx context.Context, record string) (*httpServer, error) {
	argv, err := serverCommand(record)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], append(argv[1:], "-http", "127.0.0.1:0", "-generations", "stateless")...)
	cmd.Env = append(os.Environ(), ServeEnv+"=1", "GORACE=atexit_sleep_ms=0")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("loadtest: starting the mcptest HTTP server: %w", err)
	}
	s := &httpServer{cmd: cmd, done: make(chan struct{})}
	lines := make(chan string, 1)
	go func() {
		br := bufio.NewReader(out)
		line, _ := br.ReadString('\n')
		lines <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, br)
		_ = cmd.Wait()
		close(s.done)
	}()
	select {
	case s.url = <-lines:
	case <-ctx.Done():
		s.stop()
		return nil, fmt.Errorf("loadtest: waiting for the mcptest HTTP server: %w", ctx.Err())
	}
	if !strings.HasPrefix(s.url, "http://127.0.0.1:") {
		s.stop()
		return nil, fmt.Errorf("loadtest: the mcptest HTTP server printed %q, not its URL", s.url)
	}
	return s, nil
}

// stop ends the server: SIGTERM, then SIGKILL if it lingers.
func (s *httpServer) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}
