//go:build unix

package mcp_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
)

// shellServer returns a transport that runs script with sh, $0 being this
// test binary as an mcptest stdio server and $1 a file the script may
// write pids to (one a line), which pids reads. Every pid listed there is
// killed when the test ends, whatever the test found.
func shellServer(t *testing.T, script string) (cmd *mcp.CommandTransport, pidFile string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pidFile = filepath.Join(t.TempDir(), "pids")
	cmd = mcp.Command("sh", "-c", script, exe, pidFile)
	// Without atexit_sleep_ms=0 a race-enabled server sleeps a second
	// before it exits, and is signalled for it: these servers must exit
	// at stdin EOF by themselves.
	cmd.Env = append(os.Environ(), serveEnv+"=1", "GORACE=atexit_sleep_ms=0")
	cmd.TerminateGrace = 500 * time.Millisecond
	t.Cleanup(func() {
		for _, pid := range readPids(pidFile) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return cmd, pidFile
}

func readPids(file string) []int {
	b, _ := os.ReadFile(file)
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// pids returns the n pids the script wrote, waiting for them.
func pids(t *testing.T, file string, n int) []int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if p := readPids(file); len(p) >= n {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server never wrote %d pids to %s", n, file)
		}
		time.Sleep(time.Millisecond)
	}
}

// gone reports whether process pid has ended: it does not exist, or it is
// a zombie that its new parent has not reaped yet (it runs nothing).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	rest := stat[strings.LastIndexByte(string(stat), ')')+1:]
	state := strings.Fields(string(rest))
	return len(state) > 0 && (state[0] == "Z" || state[0] == "X")
}

// waitGone fails the test unless process pid ends. Once its group is
// killed it ends at once, but a reparented process is reaped when its new
// parent gets to it: this bounds the wait, it measures nothing.
func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) is still running", what, pid)
		}
		time.Sleep(time.Millisecond)
	}
}

// A server that exits without answering fails the call in flight with its
// exit status, even while a process it left behind holds its stdout open:
// a child in its process group, or one that started a session of its own
// (which the group's end does not reach). The call's budget is a minute:
// a client that waited for stdout to close would fail with ErrTimeout.
func TestServerExitIsSeenWhileAChildHoldsItsStdout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, spawn string }{
		{"same group", "sleep 600"},
		{"new session", "setsid sleep 600"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.name == "new session" {
				if _, err := exec.LookPath("setsid"); err != nil {
					t.Skip("no setsid program")
				}
			}
			// The child inherits stdout and stderr; $! is its pid (a
			// background job of sh -c is no group leader, so setsid
			// does not fork).
			cmd, pidFile := shellServer(t, tc.spawn+` & echo $! > "$1"; exec "$0"`)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := mcp.Connect(ctx, cmd, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			child := pids(t, pidFile, 1)[0]

			ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err = c.CallTool(ctx, "crash", nil, nil)
			if errors.Is(err, mcp.ErrTimeout) || !errors.Is(err, mcp.ErrClosed) || !strings.Contains(err.Error(), "server exited: exit status 3") {
				t.Fatalf("CallTool = %v, want ErrClosed naming the exit (server exited: exit status 3)", err)
			}
			if err := c.Err(); !errors.Is(err, mcp.ErrClosed) || !strings.Contains(err.Error(), "exit status 3") {
				t.Errorf("Err = %v, want the exit status", err)
			}
			c.Close()
			if tc.name == "same group" {
				waitGone(t, child, "the server's child in its process group")
			}
		})
	}
}

// The server's process group ends with it: a child the server left in its
// group is gone once Close returns, though the server itself exited
// normally at stdin EOF.
func TestCloseEndsTheServersProcessGroup(t *testing.T) {
	t.Parallel()
	cmd, pidFile := shellServer(t, `sleep 600 </dev/null >/dev/null 2>&1 & echo $! > "$1"; exec "$0"`)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := mcp.Connect(ctx, cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(ctx, "echo", map[string]any{"text": "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	child := pids(t, pidFile, 1)[0]
	if gone(child) {
		t.Fatal("the child is gone before Close")
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	waitGone(t, child, "the server's child in its process group")
}

// Shutdown with a context that has already ended does not wait out the
// server's grace periods (an hour each here): a server that ignores stdin
// EOF and SIGTERM is killed at once. A Shutdown that waited would hang the
// test until its timeout.
func TestShutdownWithAnEndedContextKillsAStubbornServer(t *testing.T) {
	t.Parallel()
	// sh ignores SIGTERM, and so does the sleep it runs once the server
	// has exited at stdin EOF (ignored signals survive exec).
	cmd, pidFile := shellServer(t, `trap "" TERM; echo $$ > "$1"; "$0"; sleep 600 & echo $! >> "$1"; wait`)
	cmd.TerminateGrace = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := mcp.Connect(ctx, cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(ctx, "echo", map[string]any{"text": "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	leader := pids(t, pidFile, 1)[0]
	ended, end := context.WithCancel(context.Background())
	end()
	if err := c.Shutdown(ended); err != nil {
		t.Errorf("Shutdown = %v", err)
	}
	// The leader was reaped before Shutdown returned.
	if err := syscall.Kill(leader, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the server (pid %d) outlived Shutdown: kill(pid, 0) = %v", leader, err)
	}
	for _, pid := range readPids(pidFile)[1:] {
		waitGone(t, pid, "the server's child")
	}
}
