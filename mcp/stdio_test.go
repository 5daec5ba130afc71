package mcp_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
)

// The server's stderr reaches the logger line by line, never the protocol.
func TestStderrIsForwardedToTheLogger(t *testing.T) {
	run(t, []mode{stdio2026}, func(t *testing.T, b *testBundle) {
		if res := b.mustCall("stderr", map[string]any{"lines": 2}); res.Text() != "wrote to stderr" {
			t.Fatalf("stderr tool = %q", res.Text())
		}
		deadline := time.Now().Add(10 * time.Second)
		for len(b.logs.lines("server stderr", "noise line 2")) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("stderr lines never logged; log:\n%s", b.logs)
			}
			time.Sleep(time.Millisecond)
		}
	})
}

// Close is bounded even for a server that ignores stdin EOF and SIGTERM:
// it escalates to SIGKILL, and the call in flight ends with ErrClosed.
func TestCloseStopsAStubbornServer(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The shell ignores SIGTERM, and so does the sleep it leaves behind
	// (ignored signals survive exec); it holds stdout open, so only
	// SIGKILL to the whole group ends it.
	cmd := mcp.Command("sh", "-c", `trap "" TERM; "$0"; sleep 60`, exe)
	cmd.Env = append(os.Environ(), serveEnv+"=1")
	cmd.TerminateGrace = 100 * time.Millisecond
	c, err := mcp.Connect(context.Background(), cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := c.CallTool(context.Background(), "stubborn", map[string]any{"ms": 60000}, nil)
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond) // let the call go out; either way it must end with ErrClosed
	if err := c.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	if err := <-errc; !errors.Is(err, mcp.ErrClosed) {
		t.Errorf("call in flight = %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

func TestCommandNotFound(t *testing.T) {
	t.Parallel()
	_, err := mcp.Connect(context.Background(), mcp.Command("/nonexistent/mcp-server"), nil)
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/mcp-server") {
		t.Fatalf("Connect = %v, want an error naming the program", err)
	}
}

// The subprocess gets the configured environment and working directory.
func TestCommandEnvAndDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := mcp.Command(exe, "-record", "records.jsonl")
	cmd.Env = append(os.Environ(), serveEnv+"=1")
	cmd.Dir = dir
	c, err := mcp.Connect(context.Background(), cmd, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := os.Stat(dir + "/records.jsonl"); err != nil {
		t.Errorf("server did not run in Dir: %v", err)
	}
}
