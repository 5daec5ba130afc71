package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// mode is one way to reach an mcptest server: in-process over a pipe, or as
// a real subprocess over stdio, at one protocol revision.
type mode struct {
	name       string
	subprocess bool
	version    string // pinned revision; the server serves all
}

var (
	inproc2026 = mode{"pipe/2026-07-28", false, mcp.Version20260728}
	inproc2025 = mode{"pipe/2025-11-25", false, mcp.Version20251125}
	inproc2024 = mode{"pipe/2024-11-05", false, mcp.Version20241105}
	stdio2026  = mode{"stdio/2026-07-28", true, mcp.Version20260728}
	stdio2025  = mode{"stdio/2025-11-25", true, mcp.Version20251125}
	stdio2024  = mode{"stdio/2024-11-05", true, mcp.Version20241105}
	allModes   = []mode{inproc2026, inproc2025, inproc2024, stdio2026, stdio2025, stdio2024}
)

// testBundle is what a test gets: a connected client and a view of what
// the server recorded.
type testBundle struct {
	t      *testing.T
	client *mcp.Client
	mode   mode
	logs   *logBuffer
	// records returns the server's records so far.
	records func() []mcptest.Record
}

// setupOpts adjust a test's client and server.
type setupOpts struct {
	client     mcp.ClientOptions
	server     mcptest.Options
	serverArgs []string
}

// run runs f once per mode, as parallel subtests.
func run(t *testing.T, modes []mode, f func(t *testing.T, b *testBundle)) {
	t.Helper()
	runWith(t, modes, nil, f)
}

func runWith(t *testing.T, modes []mode, opts func(*setupOpts), f func(t *testing.T, b *testBundle)) {
	t.Helper()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			var o setupOpts
			if opts != nil {
				opts(&o)
			}
			f(t, setup(t, m, &o))
		})
	}
}

func setup(t *testing.T, m mode, o *setupOpts) *testBundle {
	t.Helper()
	b := &testBundle{t: t, mode: m, logs: &logBuffer{}}
	copts := o.client
	if copts.ProtocolVersion == "" {
		copts.ProtocolVersion = m.version
	}
	if copts.Logger == nil {
		copts.Logger = slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	var transport mcp.Transport
	if m.subprocess {
		recordFile := filepath.Join(t.TempDir(), "records.jsonl")
		transport = serverCommand(t, append([]string{"-record", recordFile}, o.serverArgs...)...)
		b.records = func() []mcptest.Record {
			recs, err := mcptest.ReadRecords(recordFile)
			if err != nil && !os.IsNotExist(err) {
				t.Logf("reading records: %v", err)
			}
			return recs
		}
	} else {
		s := mcptest.NewServer(&o.server)
		t.Cleanup(s.Close)
		transport = s.Transport()
		b.records = s.Records
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := mcp.Connect(ctx, transport, &copts)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	b.client = c
	return b
}

// serverCommand returns a transport that runs this test binary as an
// mcptest stdio server with args.
func serverCommand(t *testing.T, args ...string) *mcp.CommandTransport {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := mcp.Command(exe, args...)
	cmd.Env = append(os.Environ(), serveEnv+"=1")
	cmd.TerminateGrace = 500 * time.Millisecond
	return cmd
}

// waitFor polls the server's records until one matches. The deadline only
// keeps a broken test from hanging; nothing here measures speed.
func (b *testBundle) waitFor(what string, match func(mcptest.Record) bool) mcptest.Record {
	b.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, r := range b.records() {
			if match(r) {
				return r
			}
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("server never recorded %s; records:\n%s", what, formatRecords(b.records()))
		}
		time.Sleep(time.Millisecond)
	}
}

// received returns the messages the server received with method.
func (b *testBundle) received(method string) []mcptest.Record {
	var out []mcptest.Record
	for _, r := range b.records() {
		if r.Kind == mcptest.Received && r.Method == method {
			out = append(out, r)
		}
	}
	return out
}

// toolCallIDs returns the ids of the tools/call requests the server received.
func (b *testBundle) toolCallIDs() []string {
	var ids []string
	for _, r := range b.received("tools/call") {
		ids = append(ids, r.ID)
	}
	return ids
}

// cancelledIDs returns the requestIds named by the notifications/cancelled
// the server received, in order.
func (b *testBundle) cancelledIDs() []string {
	var ids []string
	for _, r := range b.received("notifications/cancelled") {
		ids = append(ids, string(field(b.t, r.Params, "requestId")))
	}
	return ids
}

func isTool(kind, tool string) func(mcptest.Record) bool {
	return func(r mcptest.Record) bool { return r.Kind == kind && r.Tool == tool }
}

func isReceived(method string) func(mcptest.Record) bool {
	return func(r mcptest.Record) bool { return r.Kind == mcptest.Received && r.Method == method }
}

// field returns the raw JSON at a dotted path of an object.
func field(t *testing.T, raw json.RawMessage, path string) json.RawMessage {
	t.Helper()
	for _, key := range strings.Split(path, ".") {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil
		}
		raw = obj[key]
	}
	return raw
}

func formatRecords(recs []mcptest.Record) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "  %s %s id=%s tool=%s params=%s\n", r.Kind, r.Method, r.ID, r.Tool, r.Params)
	}
	return b.String()
}

// mustCall calls tool and fails the test unless it returns a result.
func (b *testBundle) mustCall(tool string, args any) *mcp.CallToolResult {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := b.client.CallTool(ctx, tool, args, nil)
	if err != nil {
		b.t.Fatalf("CallTool(%s): %v", tool, err)
	}
	return res
}

// logBuffer is a concurrency-safe log sink.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// lines returns the log lines containing all of substrs.
func (l *logBuffer) lines(substrs ...string) []string {
	var out []string
	for _, line := range strings.Split(l.String(), "\n") {
		ok := line != ""
		for _, s := range substrs {
			ok = ok && strings.Contains(line, s)
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}
