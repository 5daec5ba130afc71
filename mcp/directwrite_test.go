//go:build unix

package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
)

// neverReadsAgain is a stdio server that answers server/discover and then
// never reads its stdin again, so that the pipe to it fills up.
const neverReadsAgain = `read line
id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
printf '{"jsonrpc":"2.0","id":%s,"result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"deaf","version":"1"}}}}\n' "$id"
exec sleep 3600`

// A sender writes a small frame itself when the writer is idle, but never
// waits on a full pipe for it: once the server stops reading and the pipe
// fills, every call still ends with its own timeout, and Close still
// returns.
func TestStdioFullPipeNeverHoldsTheCaller(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // only keeps a broken test from hanging
	defer cancel()
	c, err := mcp.Connect(ctx, mcp.Command("sh", "-c", neverReadsAgain), &mcp.ClientOptions{ProtocolVersion: mcp.Version20260728})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		// 400 frames of about 300 bytes, plus a cancellation notification
		// each: far more than a 64 KiB pipe holds.
		text := strings.Repeat("x", 100)
		for i := range 400 {
			_, err := c.CallTool(ctx, "echo", map[string]any{"text": text}, &mcp.CallOptions{Timeout: 2 * time.Millisecond})
			if !errors.Is(err, mcp.ErrTimeout) {
				done <- fmt.Errorf("call %d: %v", i, err)
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("a call to a server that stopped reading: %v, want ErrTimeout", err)
		}
	case <-ctx.Done():
		t.Fatal("a call blocked on the full pipe: the calls never all returned")
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
