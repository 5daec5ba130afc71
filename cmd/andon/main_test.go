package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// andonBin is the andon binary that TestMain builds; tests run it as a real
// subprocess, since exit codes and signals are properties of a process.
var andonBin string

// patience bounds every wait in these tests. It only keeps a broken test
// from hanging; no test asserts how long anything took.
const patience = 10 * time.Second

func TestMain(m *testing.M) {
	if os.Getenv(envRawToolServer) != "" {
		os.Exit(rawToolServer(os.Stdin, os.Stdout))
	}
	if os.Getenv(envHostileServer) != "" {
		os.Exit(hostileServer(os.Stdin, os.Stdout))
	}
	if spec := os.Getenv(envDelayRelay); spec != "" {
		os.Exit(runDelayRelay(spec))
	}
	dir, err := os.MkdirTemp("", "andon-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	andonBin = filepath.Join(dir, "andon")
	args := []string{"build", "-o", andonBin}
	if raceEnabled {
		// The subprocess is where the client really runs: race-check it
		// too. A race makes it exit 66, which fails the test that ran it.
		args = append(args, "-race")
		if os.Getenv("GORACE") == "" {
			// By default a race-enabled program sleeps a second at exit
			// (andon, and the server it runs); these tests run dozens.
			os.Setenv("GORACE", "atexit_sleep_ms=0")
		}
	}
	out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building andon: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is how a run of andon ended.
type result struct {
	code           int
	stdout, stderr string
}

// runAndon runs the andon binary with args and waits for it.
func runAndon(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*patience)
	defer cancel()
	cmd := exec.CommandContext(ctx, andonBin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return result{code: exitCode(t, err), stdout: stdout.String(), stderr: stderr.String()}
}

func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode()
	default:
		t.Fatalf("running andon: %v", err)
		return -1
	}
}

// server returns a --stdio value that runs the test server, recording to
// record if it is not empty. Paths are quoted, which also exercises the
// splitter on every run.
func server(record string, flags ...string) string {
	s := shellQuote(andonBin) + " mcptest serve"
	if record != "" {
		s += " -record " + shellQuote(record)
	}
	for _, f := range flags {
		s += " " + shellQuote(f)
	}
	return s
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func recordFile(t *testing.T) string {
	return filepath.Join(t.TempDir(), "records.jsonl")
}

func (r result) check(t *testing.T, wantCode int) {
	t.Helper()
	if r.code != wantCode {
		t.Fatalf("exit code %d, want %d\nstdout: %s\nstderr: %s", r.code, wantCode, r.stdout, r.stderr)
	}
}

func TestTools(t *testing.T) {
	t.Parallel()
	r := runAndon(t, "tools", "--stdio", server(""))
	r.check(t, exitOK)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	names := map[string]string{}
	for _, l := range lines {
		name, desc, ok := strings.Cut(l, "\t")
		if !ok {
			t.Fatalf("line %q has no tab", l)
		}
		names[name] = desc
	}
	for _, want := range []string{"echo", "slow", "fail", "crash", "progress"} {
		if names[want] == "" {
			t.Errorf("tool %s missing or without description in:\n%s", want, r.stdout)
		}
	}
}

func TestToolsJSONAcrossPages(t *testing.T) {
	t.Parallel()
	r := runAndon(t, "tools", "--json", "--stdio", server("", "-page-size", "3"))
	r.check(t, exitOK)
	var tools []mcp.Tool
	if err := json.Unmarshal([]byte(r.stdout), &tools); err != nil {
		t.Fatalf("output is not a JSON array of tools: %v\n%s", err, r.stdout)
	}
	i := slices.IndexFunc(tools, func(tl mcp.Tool) bool { return tl.Name == "echo" })
	if i < 0 || len(tools[i].InputSchema) == 0 {
		t.Fatalf("echo with its input schema not in %s", r.stdout)
	}
	if len(tools) <= 3 {
		t.Errorf("got %d tools; pagination (pages of 3) was not followed", len(tools))
	}
}

func TestCallEcho(t *testing.T) {
	t.Parallel()
	r := runAndon(t, "call", "--stdio", server(""), "echo", `{"text":"hello, andon"}`)
	r.check(t, exitOK)
	if r.stdout != "hello, andon\n" {
		t.Errorf("stdout %q, want %q", r.stdout, "hello, andon\n")
	}
	if r.stderr != "" {
		t.Errorf("stderr not empty: %q", r.stderr)
	}
}

func TestCallJSON(t *testing.T) {
	t.Parallel()
	// Flags may follow the tool and its arguments.
	r := runAndon(t, "call", "--stdio", server(""), "echo", `{"text":"hi"}`, "--json")
	r.check(t, exitOK)
	var res mcp.CallToolResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("output is not a CallToolResult: %v\n%s", err, r.stdout)
	}
	if res.Text() != "hi" || res.IsError || len(res.StructuredContent) == 0 {
		t.Errorf("result %+v, want text hi with structured content", res)
	}
}

func TestCallPinnedProtocol(t *testing.T) {
	t.Parallel()
	rec := recordFile(t)
	r := runAndon(t, "call", "--protocol", mcp.Version20251125, "--stdio", server(rec), "echo", `{"text":"old"}`)
	r.check(t, exitOK)
	if r.stdout != "old\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	recs := readRecords(t, rec)
	init := find(recs, func(r mcptest.Record) bool { return r.Kind == mcptest.Received && r.Method == "initialize" })
	if init == nil {
		t.Fatal("no initialize received")
	}
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(init.Params, &p); err != nil || p.ProtocolVersion != mcp.Version20251125 {
		t.Errorf("initialize asked for %q (%v), want %s", p.ProtocolVersion, err, mcp.Version20251125)
	}
}

func TestCallToolError(t *testing.T) {
	t.Parallel()
	r := runAndon(t, "call", "--stdio", server(""), "fail", `{"message":"it broke"}`)
	r.check(t, exitToolError)
	if r.stdout != "it broke\n" {
		t.Errorf("stdout %q, want the tool's message", r.stdout)
	}
	if r.stderr != "andon: tool fail reported an error\n" {
		t.Errorf("stderr %q", r.stderr)
	}
}

// TestExitCodes covers the failures that end without a signal. Every one
// must say what went wrong on a line that starts "andon: ".
func TestExitCodes(t *testing.T) {
	t.Parallel()
	srv := server("")
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"no command", nil, exitUsage},
		{"unknown command", []string{"frobnicate"}, exitUsage},
		{"unknown flag", []string{"call", "--stdio", srv, "--frobnicate", "echo"}, exitUsage},
		{"bad JSON args", []string{"call", "--stdio", srv, "echo", `{"text":`}, exitUsage},
		{"args not an object", []string{"call", "--stdio", srv, "echo", `["hi"]`}, exitUsage},
		{"args null", []string{"call", "--stdio", srv, "echo", `null`}, exitUsage},
		{"missing tool", []string{"call", "--stdio", srv}, exitUsage},
		{"too many args", []string{"call", "--stdio", srv, "echo", `{}`, `{}`}, exitUsage},
		{"missing --stdio", []string{"call", "echo"}, exitUsage},
		{"unterminated quote in --stdio", []string{"call", "--stdio", `'` + andonBin, "echo"}, exitUsage},
		{"unknown protocol", []string{"call", "--protocol", "1999-01-01", "--stdio", srv, "echo"}, exitUsage},
		{"negative timeout", []string{"call", "--timeout", "-1s", "--stdio", srv, "echo"}, exitUsage},
		{"tools with an argument", []string{"tools", "--stdio", srv, "extra"}, exitUsage},
		{"mcptest without serve", []string{"mcptest"}, exitUsage},
		{"server does not exist", []string{"call", "--stdio", "/nonexistent/andon-no-such-server", "echo"}, exitTransport},
		{"tools from a server that does not exist", []string{"tools", "--stdio", "/nonexistent/andon-no-such-server"}, exitTransport},
		{"server crashes mid-call", []string{"call", "--stdio", srv, "crash"}, exitTransport},
		{"unknown tool (RPC error)", []string{"call", "--stdio", srv, "no_such_tool"}, exitTransport},
		{"malformed result (protocol error)", []string{"call", "--stdio", srv, "bad_result"}, exitTransport},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runAndon(t, tt.args...)
			r.check(t, tt.want)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			var errLines []string
			for _, l := range lines {
				if strings.HasPrefix(l, "andon: ") {
					errLines = append(errLines, l)
				}
			}
			if len(errLines) != 1 {
				t.Errorf("want exactly one line starting \"andon: \" on stderr, got:\n%s", r.stderr)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help"}, {"-h"}, {"call", "-h"}, {"tools", "-h"}, {"mcptest", "-h"}} {
		r := runAndon(t, args...)
		r.check(t, exitOK)
		if !strings.Contains(r.stdout, "usage: andon") {
			t.Errorf("andon %v: no usage on stdout:\n%s", args, r.stdout)
		}
	}
}

// TestCallTimeout: a call that outlives --timeout exits 124, and the server
// is told: it receives notifications/cancelled for that very request.
func TestCallTimeout(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"", mcp.Version20251125} {
		t.Run("protocol="+version, func(t *testing.T) {
			t.Parallel()
			rec := recordFile(t)
			// --timeout is the whole command's budget, connecting included:
			// room for a loaded machine to start the server, so that the call
			// is what times out.
			args := []string{"call", "--stdio", server(rec), "--timeout", "2s"}
			if version != "" {
				args = append(args, "--protocol", version)
			}
			r := runAndon(t, append(args, "slow", `{"ms":60000}`)...)
			r.check(t, exitTimeout)
			if !strings.HasPrefix(r.stderr, "andon: call slow: ") || !strings.Contains(r.stderr, "timed out") {
				t.Errorf("stderr %q", r.stderr)
			}
			checkServerToldOfCancel(t, rec)
		})
	}
}

// TestCallSignal: SIGINT or SIGTERM while a call is in flight cancels it on
// the wire, and andon exits 130.
func TestCallSignal(t *testing.T) {
	t.Parallel()
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			rec := recordFile(t)
			ctx, cancel := context.WithTimeout(t.Context(), 2*patience)
			defer cancel()
			cmd := exec.CommandContext(ctx, andonBin, "call", "--stdio", server(rec), "slow", `{"ms":60000}`)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitForRecord(t, rec, func(r mcptest.Record) bool {
				return r.Kind == mcptest.ToolStarted && r.Tool == "slow"
			})
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			r := result{code: exitCode(t, cmd.Wait()), stdout: stdout.String(), stderr: stderr.String()}
			r.check(t, exitSignal)
			if !strings.HasPrefix(r.stderr, "andon: call slow: ") || !strings.Contains(r.stderr, "cancelled") {
				t.Errorf("stderr %q", r.stderr)
			}
			checkServerToldOfCancel(t, rec)
		})
	}
}

// checkServerToldOfCancel checks that the server received
// notifications/cancelled naming the id of its slow tools/call, and that the
// tool saw the cancellation and stopped.
func checkServerToldOfCancel(t *testing.T, rec string) {
	t.Helper()
	recs := readRecords(t, rec)
	call := find(recs, func(r mcptest.Record) bool {
		return r.Kind == mcptest.Received && r.Method == "tools/call"
	})
	if call == nil {
		t.Fatal("the server received no tools/call")
	}
	notice := find(recs, func(r mcptest.Record) bool {
		if r.Kind != mcptest.Received || r.Method != "notifications/cancelled" {
			return false
		}
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		return json.Unmarshal(r.Params, &p) == nil && string(p.RequestID) == call.ID
	})
	if notice == nil {
		t.Errorf("the server received no notifications/cancelled with requestId %s; records:\n%s", call.ID, dump(recs))
	}
	if find(recs, func(r mcptest.Record) bool {
		return r.Kind == mcptest.ToolCancelled && r.ID == call.ID
	}) == nil {
		t.Errorf("no tool_cancelled record for request %s; records:\n%s", call.ID, dump(recs))
	}
}

// TestCallNoProgressWithoutTerminal: with stderr not a terminal there is no
// progress bar, so andon does not ask the server for progress at all.
func TestCallNoProgressWithoutTerminal(t *testing.T) {
	t.Parallel()
	rec := recordFile(t)
	r := runAndon(t, "call", "--stdio", server(rec), "progress", `{"count":3,"interval_ms":1}`)
	r.check(t, exitOK)
	if r.stdout != "progress done\n" || r.stderr != "" {
		t.Errorf("stdout %q, stderr %q", r.stdout, r.stderr)
	}
	call := find(readRecords(t, rec), func(r mcptest.Record) bool {
		return r.Kind == mcptest.Received && r.Method == "tools/call"
	})
	if call == nil {
		t.Fatal("no tools/call received")
	}
	if bytes.Contains(call.Params, []byte("progressToken")) {
		t.Errorf("a progress token was sent without a terminal: %s", call.Params)
	}
}

// TestVerboseShowsServerStderr: the server's stderr is logged at info level,
// hidden by default and shown with -v.
func TestVerboseShowsServerStderr(t *testing.T) {
	t.Parallel()
	quiet := runAndon(t, "call", "--stdio", server(""), "stderr")
	quiet.check(t, exitOK)
	if strings.Contains(quiet.stderr, "noise") {
		t.Errorf("server stderr shown without -v: %q", quiet.stderr)
	}
	loud := runAndon(t, "call", "-v", "--stdio", server(""), "stderr")
	loud.check(t, exitOK)
	if !strings.Contains(loud.stderr, "stderr noise line 1") {
		t.Errorf("server stderr not shown with -v: %q", loud.stderr)
	}
}

func TestDoubleDashEndsFlags(t *testing.T) {
	t.Parallel()
	// After "--", "--json" is an argument, not a flag: too many arguments.
	r := runAndon(t, "call", "--stdio", server(""), "--", "echo", `{}`, "--json")
	r.check(t, exitUsage)
	r = runAndon(t, "call", "--stdio", server(""), "--", "echo", `{"text":"dash"}`)
	r.check(t, exitOK)
	if r.stdout != "dash\n" {
		t.Errorf("stdout %q", r.stdout)
	}
}

func readRecords(t *testing.T, path string) []mcptest.Record {
	t.Helper()
	recs, err := mcptest.ReadRecords(path)
	if err != nil {
		t.Fatalf("reading records: %v", err)
	}
	return recs
}

// waitForRecord polls the record file of a running server until a record
// matches. A line may be half-written when read; the next poll sees it whole.
func waitForRecord(t *testing.T, path string, match func(mcptest.Record) bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for time.Now().Before(deadline) {
		recs, _ := mcptest.ReadRecords(path)
		if find(recs, match) != nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	recs, _ := mcptest.ReadRecords(path)
	t.Fatalf("no matching record after %v; records:\n%s", patience, dump(recs))
}

func find(recs []mcptest.Record, match func(mcptest.Record) bool) *mcptest.Record {
	for i := range recs {
		if match(recs[i]) {
			return &recs[i]
		}
	}
	return nil
}

func dump(recs []mcptest.Record) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "  %s %s id=%s tool=%s reason=%q params=%s\n", r.Kind, r.Method, r.ID, r.Tool, r.Reason, r.Params)
	}
	return b.String()
}
