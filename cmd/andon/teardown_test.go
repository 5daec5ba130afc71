//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
)

// stubbornServer returns a --stdio value that runs the test server under
// an sh that ignores SIGTERM and, once the server has exited at stdin EOF,
// runs a sleep that ignores it too and holds the server's stdout: only
// SIGKILL to the group ends it. The pids of the sh and the sleep go to a
// file, one a line; they are killed when the test ends, whatever it found.
func stubbornServer(t *testing.T) (stdio, pidFile string) {
	t.Helper()
	pidFile = filepath.Join(t.TempDir(), "pids")
	script := `trap "" TERM; echo $$ > "$1"; "$0" mcptest serve; sleep 600 & echo $! >> "$1"; wait`
	t.Cleanup(func() {
		for _, pid := range readPids(pidFile) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return "sh -c " + shellQuote(script) + " " + shellQuote(andonBin) + " " + shellQuote(pidFile), pidFile
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

// gone reports whether process pid has ended: it does not exist, or it is
// a zombie that its new parent has not reaped yet.
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	state := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	return len(state) > 0 && (state[0] == "Z" || state[0] == "X")
}

// checkServerGone fails the test unless every process the stubborn server
// listed has ended. A reparented one is reaped when its new parent gets
// to it: patience bounds that wait, it measures nothing.
func checkServerGone(t *testing.T, pidFile string) {
	t.Helper()
	pids := readPids(pidFile)
	if len(pids) == 0 {
		t.Fatal("the server never started")
	}
	deadline := time.Now().Add(patience)
	for _, pid := range pids {
		for !gone(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d of the server is still running", pid)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// A call that outlives --timeout against a server that ignores stdin EOF
// and SIGTERM still exits 124, and the server is gone when andon is. (How
// soon is measured, not asserted: the teardown after the budget takes
// moments, not grace periods; see TestSessionCloseIsBoundedByTheBudget.)
func TestCallTimeoutEndsAStubbornServer(t *testing.T) {
	t.Parallel()
	stdio, pidFile := stubbornServer(t)
	r := runAndon(t, "call", "--stdio", stdio, "--timeout", "500ms", "slow", `{"ms":60000}`)
	r.check(t, exitTimeout)
	checkServerGone(t, pidFile)
}

// A session's close is bounded by the command's budget: once the budget
// has ended (here by a signal's cancel), the server is not given its grace
// periods — an hour each here — but killed. A close that waited for them
// would hang the test until its timeout.
func TestSessionCloseIsBoundedByTheBudget(t *testing.T) {
	t.Parallel()
	stdio, pidFile := stubbornServer(t)
	var stderr bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &stderr}
	fs := newFlagSet(e, "call", "andon call", "")
	sf := addServerFlags(fs)
	if _, code, ok := sf.parse(fs, []string{"--stdio", stdio, "--timeout", "1m", "echo"}); !ok {
		t.Fatalf("parse: exit %d: %s", code, stderr.String())
	}
	sf.target.transport.(*mcp.CommandTransport).TerminateGrace = time.Hour
	signalled, signal := context.WithCancel(context.Background())
	defer signal()
	ctx, sess, code, ok := sf.open(signalled, e, &stderr)
	if !ok {
		t.Fatalf("open: exit %d: %s", code, stderr.String())
	}
	if _, err := sess.client.CallTool(ctx, "echo", map[string]any{"text": "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	signal()
	sess.close()
	checkServerGone(t, pidFile)
}
