package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// The HTTP generations mcptest serves, as its -generations flag names them.
const (
	genStateless = mcptest.Stateless // 2026-07-28
	genSessions  = mcptest.Sessions  // 2025-03-26 … 2025-11-25
	genSSE       = mcptest.LegacySSE // 2024-11-05
)

// serveHTTP starts "andon mcptest serve -http 127.0.0.1:0" as a subprocess,
// recording to rec, serving the given generations (all defaults if empty),
// and returns its endpoint URL. The server is killed when the test ends.
func serveHTTP(t *testing.T, rec string, generations ...string) string {
	t.Helper()
	args := []string{"mcptest", "serve", "-http", "127.0.0.1:0", "-record", rec}
	if len(generations) > 0 {
		args = append(args, "-generations", strings.Join(generations, ","))
	}
	cmd := exec.Command(andonBin, args...)
	stdout := &firstLine{done: make(chan struct{})}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	select {
	case <-stdout.done:
	case <-time.After(patience):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the HTTP test server printed no URL; stderr:\n%s", stderr.String())
	}
	url := stdout.line()
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("the HTTP test server printed %q, not a loopback URL", url)
	}
	return url
}

// firstLine is a process's stdout that signals once its first line is in.
type firstLine struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	done chan struct{}
	seen bool
}

func (w *firstLine) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.seen && bytes.IndexByte(w.buf.Bytes(), '\n') >= 0 {
		w.seen = true
		close(w.done)
	}
	return len(p), nil
}

func (w *firstLine) line() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l, _, _ := strings.Cut(w.buf.String(), "\n")
	return l
}

// closedPort returns a loopback URL on which nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/mcp"
}

func TestHTTPTools(t *testing.T) {
	t.Parallel()
	url := serveHTTP(t, recordFile(t))
	r := runAndon(t, "tools", "--url", url)
	r.check(t, exitOK)
	for _, want := range []string{"echo\t", "slow\t", "fail\t"} {
		if !strings.Contains(r.stdout, "\n"+want) && !strings.HasPrefix(r.stdout, want) {
			t.Errorf("tool %q missing from:\n%s", want, r.stdout)
		}
	}
}

// TestHTTPCallEachGeneration: a call works on every HTTP generation, the
// client finding the generation by itself.
func TestHTTPCallEachGeneration(t *testing.T) {
	t.Parallel()
	for _, gen := range []string{genStateless, genSessions, genSSE} {
		t.Run(gen, func(t *testing.T) {
			t.Parallel()
			url := serveHTTP(t, recordFile(t), gen)
			r := runAndon(t, "call", "--url", url, "echo", `{"text":"hi"}`)
			r.check(t, exitOK)
			if r.stdout != "hi\n" || r.stderr != "" {
				t.Errorf("stdout %q, stderr %q; want hi and nothing", r.stdout, r.stderr)
			}
			r = runAndon(t, "call", "--url", url, "fail", `{"message":"it broke"}`)
			r.check(t, exitToolError)
		})
	}
}

func TestHTTPPinnedProtocol(t *testing.T) {
	t.Parallel()
	rec := recordFile(t)
	url := serveHTTP(t, rec)
	r := runAndon(t, "call", "--url", url, "--protocol", mcp.Version20251125, "echo", `{"text":"old"}`)
	r.check(t, exitOK)
	if r.stdout != "old\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	recs := readRecords(t, rec)
	init := find(recs, func(r mcptest.Record) bool { return r.Kind == mcptest.Received && r.Method == "initialize" })
	if init == nil {
		t.Fatalf("no initialize received; records:\n%s", dump(recs))
	}
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(init.Params, &p); err != nil || p.ProtocolVersion != mcp.Version20251125 {
		t.Errorf("initialize asked for %q (%v), want %s", p.ProtocolVersion, err, mcp.Version20251125)
	}
	call := find(recs, func(r mcptest.Record) bool { return r.Kind == mcptest.Received && r.Method == "tools/call" })
	if call == nil {
		t.Fatalf("no tools/call received; records:\n%s", dump(recs))
	}
	if got := call.Header.Get("MCP-Protocol-Version"); got != mcp.Version20251125 {
		t.Errorf("tools/call carried MCP-Protocol-Version %q, want %s", got, mcp.Version20251125)
	}
	if call.Session == "" {
		t.Errorf("tools/call carried no session id in a 2025-11-25 session")
	}
}

// TestHTTPHeader: every --header arrives on every request, and its value
// never shows in andon's output, even with -v and when the call is
// cancelled or the connection fails.
func TestHTTPHeader(t *testing.T) {
	t.Parallel()
	const token = "t0k3n"
	headers := []string{"--header", "Authorization: Bearer " + token, "--header", "X-Trace: a", "--header", "x-trace:b"}
	for _, gen := range []string{genStateless, genSessions} {
		t.Run(gen, func(t *testing.T) {
			t.Parallel()
			rec := recordFile(t)
			url := serveHTTP(t, rec, gen)
			runs := []result{
				runAndon(t, append([]string{"call", "-v", "--url", url, "echo", `{"text":"hi"}`}, headers...)...),
				runAndon(t, append([]string{"tools", "-v", "--url", url}, headers...)...),
				runAndon(t, append([]string{"call", "-v", "--url", url, "--timeout", "200ms", "slow", `{"ms":60000}`}, headers...)...),
				runAndon(t, append([]string{"call", "-v", "--url", closedPort(t), "echo"}, headers...)...),
			}
			for i, want := range []int{exitOK, exitOK, exitTimeout, exitTransport} {
				runs[i].check(t, want)
				if strings.Contains(runs[i].stdout+runs[i].stderr, token) {
					t.Errorf("run %d printed the header's value:\nstdout: %s\nstderr: %s", i, runs[i].stdout, runs[i].stderr)
				}
			}
			waitForRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolCancelled })
			recs := readRecords(t, rec)
			n := 0
			for _, r := range recs {
				if r.Header == nil {
					continue // not a message received over HTTP
				}
				n++
				if got := r.Header.Get("Authorization"); got != "Bearer "+token {
					t.Errorf("%s %s arrived with Authorization %q", r.Kind, r.Method, got)
				}
				if got := r.Header.Values("X-Trace"); len(got) != 2 || got[0] != "a" || got[1] != "b" {
					t.Errorf("%s %s arrived with X-Trace %q, want [a b]", r.Kind, r.Method, got)
				}
			}
			// At least a handshake and a request for each of three runs.
			if n < 6 {
				t.Errorf("only %d records carry headers; records:\n%s", n, dump(recs))
			}
		})
	}
}

// TestHTTPCallTimeout: a call that outlives --timeout exits 124 and the
// server learns of it the way its generation requires.
func TestHTTPCallTimeout(t *testing.T) {
	t.Parallel()
	for _, gen := range []string{genStateless, genSessions, genSSE} {
		t.Run(gen, func(t *testing.T) {
			t.Parallel()
			rec := recordFile(t)
			url := serveHTTP(t, rec, gen)
			// --timeout is the whole command's budget, connecting included:
			// room for a loaded machine to start the server, so that the call
			// is what times out.
			r := runAndon(t, "call", "--url", url, "--timeout", "2s", "slow", `{"ms":60000}`)
			r.check(t, exitTimeout)
			if !strings.HasPrefix(r.stderr, "andon: call slow: ") || !strings.Contains(r.stderr, "timed out") {
				t.Errorf("stderr %q", r.stderr)
			}
			checkHTTPCancel(t, rec, gen)
		})
	}
}

// TestHTTPCallSignal: SIGINT or SIGTERM during a call over HTTP exits 130
// and the server learns of it the way its generation requires.
func TestHTTPCallSignal(t *testing.T) {
	t.Parallel()
	for _, gen := range []string{genStateless, genSessions, genSSE} {
		for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
			t.Run(gen+"/"+sig.String(), func(t *testing.T) {
				t.Parallel()
				rec := recordFile(t)
				url := serveHTTP(t, rec, gen)
				ctx, cancel := context.WithTimeout(t.Context(), 2*patience)
				defer cancel()
				cmd := exec.CommandContext(ctx, andonBin, "call", "--url", url, "slow", `{"ms":60000}`)
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
				checkHTTPCancel(t, rec, gen)
			})
		}
	}
}

// checkHTTPCancel checks, from the records of a server that andon has
// finished with, that the server was told of the cancelled slow call as
// generation gen requires (DESIGN.md, invariant 3):
//
//   - stateless (2026-07-28): the response stream closed, nothing sent;
//   - sessions: exactly one notifications/cancelled naming the call, in
//     the call's session, and its response stream closed;
//   - sse (2024-11-05): exactly one notifications/cancelled naming the
//     call, in the call's session.
//
// In every case the tool saw the cancellation. Records the server writes
// after andon has gone (a closed stream noticed) are waited for.
func checkHTTPCancel(t *testing.T, rec, gen string) {
	t.Helper()
	recs := readRecords(t, rec)
	call := find(recs, func(r mcptest.Record) bool {
		return r.Kind == mcptest.Received && r.Method == "tools/call"
	})
	if call == nil {
		t.Fatalf("the server received no tools/call; records:\n%s", dump(recs))
	}
	byID := func(kind string) func(mcptest.Record) bool {
		return func(r mcptest.Record) bool { return r.Kind == kind && r.ID == call.ID }
	}
	waitForRecord(t, rec, byID(mcptest.ToolCancelled))
	if gen != genSSE {
		waitForRecord(t, rec, byID(mcptest.StreamClosed))
	}
	recs = readRecords(t, rec)

	var notices []mcptest.Record
	for _, r := range recs {
		if r.Kind != mcptest.Received || r.Method != "notifications/cancelled" {
			continue
		}
		notices = append(notices, r)
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if err := json.Unmarshal(r.Params, &p); err != nil || string(p.RequestID) != call.ID {
			t.Errorf("notifications/cancelled names request %s, want %s", p.RequestID, call.ID)
		}
		if r.Session == "" || r.Session != call.Session {
			t.Errorf("notifications/cancelled came in session %q, the call in %q", r.Session, call.Session)
		}
	}
	switch gen {
	case genStateless:
		if len(notices) != 0 {
			t.Errorf("2026-07-28 server got %d notifications/cancelled, want none; records:\n%s", len(notices), dump(recs))
		}
		if r := find(recs, func(r mcptest.Record) bool { return r.Kind == mcptest.Rejected }); r != nil {
			t.Errorf("the server rejected a message: %s %s", r.Method, r.Reason)
		}
	default:
		if len(notices) != 1 {
			t.Errorf("%s server got %d notifications/cancelled, want exactly one; records:\n%s", gen, len(notices), dump(recs))
		}
	}
}

// TestHTTPExitCodes covers --url's usage errors and transport failures.
// Each says what went wrong on one "andon: " line, and none prints a
// secret: a URL's userinfo and query, or a header's value.
func TestHTTPExitCodes(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t"
	refused := closedPort(t)
	withSecrets := strings.Replace(refused, "http://", "http://us3r:"+secret+"@", 1) + "?key=" + secret

	status500 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "broken", http.StatusInternalServerError)
	}))
	t.Cleanup(status500.Close)

	tests := []struct {
		name string
		args []string
		want int
	}{
		{"neither --url nor --stdio", []string{"call", "echo"}, exitUsage},
		{"both --url and --stdio", []string{"call", "--url", refused, "--stdio", server(""), "echo"}, exitUsage},
		{"tools with both", []string{"tools", "--url", refused, "--stdio", server("")}, exitUsage},
		{"ftp URL", []string{"call", "--url", "ftp://x", "echo"}, exitUsage},
		{"ftp URL with secrets", []string{"call", "--url", "ftp://us3r:" + secret + "@x/?key=" + secret, "echo"}, exitUsage},
		{"URL without host", []string{"call", "--url", "http:///mcp", "echo"}, exitUsage},
		{"unparsable URL", []string{"call", "--url", "http://x/%zz?key=" + secret, "echo"}, exitUsage},
		{"header without colon", []string{"call", "--url", refused, "--header", "Bearer " + secret, "echo"}, exitUsage},
		{"header with a bad name", []string{"call", "--url", refused, "--header", "Bad Name: " + secret, "echo"}, exitUsage},
		{"header value with a newline", []string{"call", "--url", refused, "--header", "Authorization: Bearer " + secret + "\r\nX-Injected: 1", "echo"}, exitUsage},
		{"header andon sets", []string{"call", "--url", refused, "--header", "Mcp-Session-Id: " + secret, "echo"}, exitUsage},
		{"header with --stdio", []string{"call", "--stdio", server(""), "--header", "Authorization: " + secret, "echo"}, exitUsage},
		{"connection refused", []string{"call", "--url", refused, "echo"}, exitTransport},
		{"connection refused, secrets in the URL", []string{"call", "-v", "--url", withSecrets, "--header", "Authorization: Bearer " + secret, "echo"}, exitTransport},
		{"tools, connection refused", []string{"tools", "--url", refused}, exitTransport},
		{"HTTP 500", []string{"call", "--url", status500.URL + "/mcp?key=" + secret, "echo"}, exitTransport},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runAndon(t, tt.args...)
			r.check(t, tt.want)
			var errLines []string
			for l := range strings.SplitSeq(strings.TrimSpace(r.stderr), "\n") {
				if strings.HasPrefix(l, "andon: ") {
					errLines = append(errLines, l)
				}
			}
			if len(errLines) != 1 {
				t.Errorf("want exactly one line starting \"andon: \" on stderr, got:\n%s", r.stderr)
			}
			if strings.Contains(r.stdout+r.stderr, secret) {
				t.Errorf("a secret was printed:\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
			}
		})
	}
}

// TestHTTPHelpShowsNoHeaderValue: -h documents --url and --header, and
// never echoes a header given on the same command line.
func TestHTTPHelpShowsNoHeaderValue(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"call", "tools"} {
		r := runAndon(t, cmd, "--header", "Authorization: Bearer t0k3n", "-h")
		r.check(t, exitOK)
		for _, want := range []string{"-url URL", "-header"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("andon %s -h does not document %s:\n%s", cmd, want, r.stdout)
			}
		}
		if strings.Contains(r.stdout+r.stderr, "t0k3n") {
			t.Errorf("andon %s -h printed a header value:\n%s%s", cmd, r.stdout, r.stderr)
		}
	}
}
