package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
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
	version    string               // pinned revision; the server serves all
	http       *mcptest.HTTPOptions // non-nil: over HTTP on loopback
}

var (
	inproc2026 = mode{name: "pipe/2026-07-28", version: mcp.Version20260728}
	inproc2025 = mode{name: "pipe/2025-11-25", version: mcp.Version20251125}
	inproc2024 = mode{name: "pipe/2024-11-05", version: mcp.Version20241105}
	stdio2026  = mode{name: "stdio/2026-07-28", subprocess: true, version: mcp.Version20260728}
	stdio2025  = mode{name: "stdio/2025-11-25", subprocess: true, version: mcp.Version20251125}
	stdio2024  = mode{name: "stdio/2024-11-05", subprocess: true, version: mcp.Version20241105}

	http2026     = mode{name: "http/2026-07-28/sse", version: mcp.Version20260728, http: &mcptest.HTTPOptions{}}
	http2026JSON = mode{name: "http/2026-07-28/json", version: mcp.Version20260728, http: &mcptest.HTTPOptions{JSONResponse: true}}
	http2025     = mode{name: "http/2025-11-25/sse", version: mcp.Version20251125, http: &mcptest.HTTPOptions{}}
	http2025JSON = mode{name: "http/2025-06-18/json", version: mcp.Version20250618, http: &mcptest.HTTPOptions{JSONResponse: true}}
	http2024     = mode{name: "http+sse/2024-11-05", version: mcp.Version20241105, http: &mcptest.HTTPOptions{Generations: []string{mcptest.LegacySSE}}}

	streamModes = []mode{inproc2026, inproc2025, inproc2024, stdio2026, stdio2025, stdio2024}
	httpModes   = []mode{http2026, http2026JSON, http2025, http2025JSON, http2024}
	allModes    = append(append([]mode(nil), streamModes...), httpModes...)
	// progressModes can carry messages before the response: all but the
	// JSON-response modes.
	progressModes = append(append([]mode(nil), streamModes...), http2026, http2025, http2024)
)

// modernHTTP reports a mode whose calls are cancelled by closing the
// response stream alone.
func (m mode) modernHTTP() bool { return m.http != nil && m.version == mcp.Version20260728 }

// perRequestStream reports a mode where each request has a response stream
// of its own that the client closes when it abandons the request.
func (m mode) perRequestStream() bool {
	return m.http != nil && !slices.Contains(m.http.Generations, mcptest.LegacySSE)
}

// testBundle is what a test gets: a connected client and a view of what
// the server recorded.
type testBundle struct {
	t      *testing.T
	client *mcp.Client
	mode   mode
	logs   *logBuffer
	// records returns the server's records so far.
	records func() []mcptest.Record
	// server is the in-process server, nil for a subprocess.
	server *mcptest.Server
	// httpTransport reaches the HTTP server again, on a new connection.
	httpTransport func() mcp.Transport
}

// setupOpts adjust a test's client and server.
type setupOpts struct {
	client     mcp.ClientOptions
	server     mcptest.Options
	serverArgs []string
	http       func(*mcptest.HTTPOptions) // adjusts the mode's HTTP options
	header     http.Header                // HTTPTransport.Header
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
	switch {
	case m.http != nil:
		s := mcptest.NewServer(&o.server)
		t.Cleanup(s.Close)
		hopts := *m.http
		if o.http != nil {
			o.http(&hopts)
		}
		hs := httptest.NewServer(s.HTTPHandler(&hopts))
		t.Cleanup(hs.Close)
		transport = &mcp.HTTPTransport{URL: hs.URL, Client: hs.Client(), Header: o.header}
		b.httpTransport = func() mcp.Transport {
			return &mcp.HTTPTransport{URL: hs.URL, Client: hs.Client(), Header: o.header}
		}
		b.records = s.Records
		b.server = s
	case m.subprocess:
		recordFile := filepath.Join(t.TempDir(), "records.jsonl")
		transport = serverCommand(t, append([]string{"-record", recordFile}, o.serverArgs...)...)
		b.records = func() []mcptest.Record {
			recs, err := mcptest.ReadRecords(recordFile)
			if err != nil && !os.IsNotExist(err) {
				t.Logf("reading records: %v", err)
			}
			return recs
		}
	default:
		s := mcptest.NewServer(&o.server)
		t.Cleanup(s.Close)
		transport = s.Transport()
		b.records = s.Records
		b.server = s
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
func serverCommand(t testing.TB, args ...string) *mcp.CommandTransport {
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

// assertCancelledOnTheWire checks that the server was told, the way the
// mode's transport and revision require, that request callID was
// cancelled: exactly one notifications/cancelled naming it (in the same
// session over HTTP), or on 2026-07-28 HTTP no notification and its
// response stream closed. (Handshake-era servers may finish answering
// before they notice a closed stream, so there the notification is what is
// asserted.)
func (b *testBundle) assertCancelledOnTheWire(callID string) {
	b.t.Helper()
	b.assertRequestCancelledOnTheWire("tools/call", callID)
}

// assertRequestCancelledOnTheWire is assertCancelledOnTheWire for a request
// of any method.
func (b *testBundle) assertRequestCancelledOnTheWire(method, callID string) {
	b.t.Helper()
	if b.mode.modernHTTP() {
		// The closed stream is the whole signal.
		b.waitFor("the response stream of "+callID+" to close", func(r mcptest.Record) bool {
			return r.Kind == mcptest.StreamClosed && r.ID == callID
		})
		for _, r := range b.records() {
			if r.Method == "notifications/cancelled" {
				b.t.Errorf("2026-07-28 HTTP: the server received a notifications/cancelled: %s", r.Raw)
			}
		}
		return
	}
	b.waitFor("notifications/cancelled", isReceived("notifications/cancelled"))
	notes := b.received("notifications/cancelled")
	if len(notes) != 1 {
		b.t.Fatalf("server received %d notifications/cancelled, want 1:\n%s", len(notes), formatRecords(notes))
	}
	if got := string(field(b.t, notes[0].Params, "requestId")); got != callID {
		b.t.Errorf("requestId = %s, want %s", got, callID)
	}
	if b.mode.http != nil {
		var callSession string
		for _, r := range b.received(method) {
			if r.ID == callID {
				callSession = r.Session
			}
		}
		if notes[0].Session == "" || notes[0].Session != callSession {
			b.t.Errorf("notification came in session %q, the call in %q", notes[0].Session, callSession)
		}
	}
}

// cancelWhenStarted calls cancel once the server has started tool n times.
// It works on every transport, JSON responses included, where no progress
// can tell the client that the tool is running.
func (b *testBundle) cancelWhenStarted(tool string, n int, cancel func()) {
	go func() {
		defer cancel()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			started := 0
			for _, r := range b.records() {
				if r.Kind == mcptest.ToolStarted && r.Tool == tool {
					started++
				}
			}
			if started >= n {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
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
