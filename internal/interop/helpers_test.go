package interop

import (
	"bufio"
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/andonhq/andon/mcp"
)

// revisions are the protocol revisions every interop test runs on: the
// stateless revision and the newest one with an initialize handshake.
var revisions = []string{mcp.Version20260728, mcp.Version20251125}

// pollDeadline bounds every wait for a peer to do something. It only keeps
// a broken test from hanging; nothing asserts how long anything took.
const pollDeadline = 10 * time.Second

// selfCommand returns the path of the running test binary and an environment
// that makes it play role, plus the extra variables env ("K=V").
//
// Under the race detector, a process sleeps a second before it exits
// (GORACE atexit_sleep_ms, default 1000), which would add a second to every
// test's cleanup; the subprocess is told not to.
func selfCommand(t testing.TB, role string, env ...string) (string, []string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("finding the test binary: %v", err)
	}
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	return exe, append(append(os.Environ(), roleEnv+"="+role, "GORACE="+gorace), env...)
}

// testLogger returns a logger that writes warnings and worse to t's log.
func testLogger(t testing.TB) *slog.Logger {
	t.Helper()
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// andonToGoSDK starts a go-sdk server subprocess, connects andon's client to
// it pinned to revision, and returns the client and the file the server
// writes its events to. Both are cleaned up with t.
func andonToGoSDK(t *testing.T, revision string) (*mcp.Client, string) {
	t.Helper()
	events := filepath.Join(t.TempDir(), "events")
	exe, env := selfCommand(t, roleGoSDKServer, eventsFileEnv+"="+events)
	tr := mcp.Command(exe)
	tr.Env = env
	ctx, cancel := context.WithTimeout(t.Context(), pollDeadline)
	defer cancel()
	c, err := mcp.Connect(ctx, tr, &mcp.ClientOptions{ProtocolVersion: revision, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("connecting to the go-sdk server on %s: %v", revision, err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("closing the client: %v", err)
		}
	})
	if got := c.ProtocolVersion(); got != revision {
		t.Fatalf("negotiated %q, pinned %q", got, revision)
	}
	return c, events
}

// gosdkToMCPTest starts andon's mcptest server as a subprocess, with the
// extra environment env, and connects the go-sdk client to it, asking for
// revision. The session is closed with t.
func gosdkToMCPTest(t *testing.T, revision string, env ...string) *gosdk.ClientSession {
	t.Helper()
	exe, env := selfCommand(t, roleMCPTestServer, env...)
	cmd := exec.Command(exe)
	cmd.Env = env
	cmd.Stderr = tWriter{t}
	client := gosdk.NewClient(&gosdk.Implementation{Name: "interop-gosdk-client", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), pollDeadline)
	defer cancel()
	cs, err := client.Connect(ctx, &gosdk.CommandTransport{Command: cmd}, &gosdk.ClientSessionOptions{ProtocolVersion: revision})
	if err != nil {
		t.Fatalf("go-sdk client connecting to mcptest on %s: %v", revision, err)
	}
	t.Cleanup(func() {
		if err := cs.Close(); err != nil {
			t.Errorf("closing the go-sdk session: %v", err)
		}
	})
	return cs
}

// waitEvent polls the events file until the server has reported kind for
// tag, and returns when the server says it happened.
func waitEvent(t *testing.T, path, kind, tag string) time.Time {
	t.Helper()
	deadline := time.Now().Add(pollDeadline)
	for {
		if at, ok := findEvent(t, path, kind, tag); ok {
			return at
		}
		if time.Now().After(deadline) {
			data, _ := os.ReadFile(path)
			t.Fatalf("the server did not report %s %s within %v; its events:\n%s", kind, tag, pollDeadline, data)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// findEvent reports whether the events file holds kind for tag.
func findEvent(t *testing.T, path, kind, tag string) (time.Time, bool) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return time.Time{}, false
		}
		t.Fatalf("reading the server's events: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == kind && f[1] == tag {
			ns, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				t.Fatalf("malformed event %q", sc.Text())
			}
			return time.Unix(0, ns), true
		}
	}
	return time.Time{}, false
}

// callEcho calls echo on c and checks that the text comes back.
func callEcho(t *testing.T, c *mcp.Client, text string) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), pollDeadline)
	defer cancel()
	res, err := c.CallTool(ctx, "echo", map[string]any{"text": text}, nil)
	if err != nil {
		t.Fatalf("calling echo: %v", err)
	}
	if res.IsError || res.Text() != text {
		t.Fatalf("echo returned %+v, want the text %q", res, text)
	}
	return res
}
