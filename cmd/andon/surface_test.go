package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// The commands beyond tools (resources, prompts, complete) run as real
// subprocesses against mcptest, as 'andon call' does in main_test.go.

func TestResourcesList(t *testing.T) {
	t.Parallel()
	r := runAndon(t, "resources", "list", "--stdio", server("", "-page-size", "1"))
	r.check(t, exitOK)
	want := "mcptest://static/hello\thello\t\nmcptest://static/bytes\tbytes\t\nmcptest://static/readme\treadme\t\n"
	if r.stdout != want {
		t.Errorf("stdout %q, want %q (every page followed)", r.stdout, want)
	}
	r = runAndon(t, "resources", "list", "--templates", "--json", "--stdio", server(""))
	r.check(t, exitOK)
	var templates []mcp.ResourceTemplate
	if err := json.Unmarshal([]byte(r.stdout), &templates); err != nil {
		t.Fatalf("--json output %q: %v", r.stdout, err)
	}
	if len(templates) != 3 || templates[0].URITemplate != "mcptest://large/{bytes}" || templates[0].MIMEType != "text/plain" {
		t.Errorf("templates %+v", templates)
	}
}

func TestResourcesRead(t *testing.T) {
	t.Parallel()
	for _, version := range []string{mcp.Version20260728, mcp.Version20251125, mcp.Version20241105} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			r := runAndon(t, "resources", "read", "--protocol", version, "--stdio", server(""), "mcptest://static/hello")
			r.check(t, exitOK)
			if r.stdout != "hello from mcptest\n" || r.stderr != "" {
				t.Errorf("stdout %q, stderr %q", r.stdout, r.stderr)
			}
		})
	}
	r := runAndon(t, "resources", "read", "--stdio", server(""), "mcptest://static/bytes")
	r.check(t, exitOK)
	if r.stdout != "[blob mcptest://static/bytes application/octet-stream, 256 bytes; see --json]\n" {
		t.Errorf("a blob without --json printed %q, want a one-line note", r.stdout)
	}
	r = runAndon(t, "resources", "read", "--json", "--stdio", server(""), "mcptest://static/bytes")
	r.check(t, exitOK)
	var res mcp.ReadResourceResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("--json output %q: %v", r.stdout, err)
	}
	if len(res.Contents) != 1 || len(res.Contents[0].Blob) != 256 || res.Contents[0].Blob[255] != 255 {
		t.Errorf("--json contents %+v, want the 256 bytes", res.Contents)
	}
}

func TestPromptsListAndGet(t *testing.T) {
	t.Parallel()
	r := runAndon(t, "prompts", "list", "--stdio", server(""))
	r.check(t, exitOK)
	if want := "greet\tGreets someone.\tname* style\nplain\tA prompt without arguments.\t\n"; r.stdout != want {
		t.Errorf("stdout %q, want %q", r.stdout, want)
	}
	r = runAndon(t, "prompts", "get", "--stdio", server(""), "greet", `{"name":"Ada","style":"a poet"}`)
	r.check(t, exitOK)
	if want := "user: Hello, Ada! (in the style of a poet)\n"; r.stdout != want {
		t.Errorf("stdout %q, want %q", r.stdout, want)
	}
	r = runAndon(t, "prompts", "get", "--json", "--stdio", server(""), "plain")
	r.check(t, exitOK)
	var res mcp.GetPromptResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res.Messages) != 1 || res.Messages[0].Role != "assistant" {
		t.Errorf("--json output %q (%v)", r.stdout, err)
	}
}

func TestComplete(t *testing.T) {
	t.Parallel()
	r := runAndon(t, "complete", "--stdio", server(""), "--prompt", "greet", "style", "a p")
	r.check(t, exitOK)
	if r.stdout != "a pirate\na poet\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	r = runAndon(t, "complete", "--json", "--stdio", server(""), "--resource", "mcptest://large/{bytes}", "bytes", "10")
	r.check(t, exitOK)
	var c mcp.Completion
	if err := json.Unmarshal([]byte(r.stdout), &c); err != nil || strings.Join(c.Values, ",") != "10,100,1000" || c.Total != 3 {
		t.Errorf("--json output %q (%v)", r.stdout, err)
	}
}

// TestSurfaceExitCodes: usage mistakes exit 2 before anything is started;
// a server's refusal and a read past --max-size exit 3.
func TestSurfaceExitCodes(t *testing.T) {
	t.Parallel()
	srv := server("")
	cases := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no subcommand", []string{"resources"}, exitUsage, "missing subcommand"},
		{"unknown subcommand", []string{"prompts", "render"}, exitUsage, `unknown subcommand "render"`},
		{"no server", []string{"resources", "list"}, exitUsage, "one of --stdio or --url"},
		{"no URI", []string{"resources", "read", "--stdio", srv}, exitUsage, "missing URI"},
		{"list takes no argument", []string{"resources", "list", "--stdio", srv, "extra"}, exitUsage, "unexpected argument"},
		{"negative --max-size", []string{"resources", "read", "--max-size", "-1", "--stdio", srv, "x"}, exitUsage, "negative --max-size"},
		{"prompt args not strings", []string{"prompts", "get", "--stdio", srv, "greet", `{"name":1}`}, exitUsage, `"name" must be a string`},
		{"no ref", []string{"complete", "--stdio", srv, "style"}, exitUsage, "one of --prompt or --resource"},
		{"two refs", []string{"complete", "--stdio", srv, "--prompt", "greet", "--resource", "x", "style"}, exitUsage, "not both"},
		{"unknown resource", []string{"resources", "read", "--stdio", srv, "mcptest://nothing"}, exitTransport, "resource not found"},
		{"missing prompt argument", []string{"prompts", "get", "--stdio", srv, "greet"}, exitTransport, "missing required argument name"},
		{"past --max-size", []string{"resources", "read", "--max-size", "10", "--stdio", srv, "mcptest://large/11"}, exitTransport, "resource too large"},
		{"nothing to complete", []string{"complete", "--stdio", srv, "--prompt", "plain", "x"}, exitTransport, "nothing to complete"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := runAndon(t, c.args...)
			r.check(t, c.code)
			if !strings.HasPrefix(r.stderr, "andon: ") || !strings.Contains(r.stderr, c.stderr) {
				t.Errorf("stderr %q, want an andon: line containing %q", r.stderr, c.stderr)
			}
		})
	}
}

// TestResourcesReadTimeout: a read that outlives --timeout exits 124, and
// the server is told: notifications/cancelled naming the read, which stops.
func TestResourcesReadTimeout(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"", mcp.Version20251125} {
		t.Run("protocol="+version, func(t *testing.T) {
			t.Parallel()
			rec := recordFile(t)
			// Room for a loaded machine to start the server, so that the
			// read is what times out.
			args := []string{"resources", "read", "--stdio", server(rec), "--timeout", "2s"}
			if version != "" {
				args = append(args, "--protocol", version)
			}
			r := runAndon(t, append(args, "mcptest://slow/60000")...)
			r.check(t, exitTimeout)
			if !strings.HasPrefix(r.stderr, "andon: read mcptest://slow/60000: ") || !strings.Contains(r.stderr, "timed out") {
				t.Errorf("stderr %q", r.stderr)
			}
			checkServerToldOfCancelledRequest(t, rec, "resources/read", mcptest.ReadCancelled)
		})
	}
}

// TestResourcesReadSignal: SIGINT or SIGTERM during a read cancels it on the
// wire, and andon exits 130.
func TestResourcesReadSignal(t *testing.T) {
	t.Parallel()
	for _, sig := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			rec := recordFile(t)
			r := signalDuring(t, rec, sig, "resources", "read", "--stdio", server(rec), "mcptest://slow/60000")
			r.check(t, exitSignal)
			if !strings.HasPrefix(r.stderr, "andon: read mcptest://slow/60000: ") || !strings.Contains(r.stderr, "cancelled") {
				t.Errorf("stderr %q", r.stderr)
			}
			checkServerToldOfCancelledRequest(t, rec, "resources/read", mcptest.ReadCancelled)
		})
	}
}

// TestHTTPResourcesReadSignal: Ctrl-C during a read over HTTP exits 130,
// and the server learns of it the way its generation requires: on
// 2026-07-28 the response stream closes and nothing is sent; with sessions
// and on HTTP+SSE exactly one notifications/cancelled names the read.
func TestHTTPResourcesReadSignal(t *testing.T) {
	t.Parallel()
	for _, gen := range []string{genStateless, genSessions, genSSE} {
		t.Run(gen, func(t *testing.T) {
			t.Parallel()
			rec := recordFile(t)
			url := serveHTTP(t, rec, gen)
			r := signalDuring(t, rec, os.Interrupt, "resources", "read", "--url", url, "mcptest://slow/60000")
			r.check(t, exitSignal)
			read := find(readRecords(t, rec), func(r mcptest.Record) bool {
				return r.Kind == mcptest.Received && r.Method == "resources/read"
			})
			if read == nil {
				t.Fatal("the server received no resources/read")
			}
			waitForRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.ReadCancelled && r.ID == read.ID })
			if gen != genSSE {
				waitForRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.StreamClosed && r.ID == read.ID })
			}
			notices := cancelNotices(readRecords(t, rec), read.ID)
			want := 1
			if gen == genStateless {
				want = 0
			}
			if notices != want {
				t.Errorf("%s server got %d notifications/cancelled naming the read, want %d; records:\n%s", gen, notices, want, dump(readRecords(t, rec)))
			}
		})
	}
}

// signalDuring is signalWhen the server has begun its slow read.
func signalDuring(t *testing.T, rec string, sig os.Signal, args ...string) result {
	t.Helper()
	return signalWhen(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.ReadStarted }, sig, args...)
}

// checkServerToldOfCancelledRequest checks that a stdio server received one
// notifications/cancelled naming its request of method, and recorded
// stopped (a record kind such as ReadCancelled) for it.
func checkServerToldOfCancelledRequest(t *testing.T, rec, method, stopped string) {
	t.Helper()
	recs := readRecords(t, rec)
	req := find(recs, func(r mcptest.Record) bool { return r.Kind == mcptest.Received && r.Method == method })
	if req == nil {
		t.Fatalf("the server received no %s; records:\n%s", method, dump(recs))
	}
	if n := cancelNotices(recs, req.ID); n != 1 {
		t.Errorf("the server received %d notifications/cancelled with requestId %s, want 1; records:\n%s", n, req.ID, dump(recs))
	}
	waitForRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == stopped && r.ID == req.ID })
}

// cancelNotices counts the notifications/cancelled naming request id.
func cancelNotices(recs []mcptest.Record, id string) int {
	n := 0
	for _, r := range recs {
		if r.Kind != mcptest.Received || r.Method != "notifications/cancelled" {
			continue
		}
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(r.Params, &p) == nil && string(p.RequestID) == id {
			n++
		}
	}
	return n
}

// TestSurfaceCommandsStopOnSignalAndTimeout: every surface command stops as
// 'andon call' does. The server holds the command's request (mcptest
// -stall); SIGINT exits 130 and --timeout exits 124, and either way the
// server receives notifications/cancelled naming that request.
func TestSurfaceCommandsStopOnSignalAndTimeout(t *testing.T) {
	t.Parallel()
	commands := []struct {
		method string
		args   []string
	}{
		{"resources/list", []string{"resources", "list"}},
		{"resources/templates/list", []string{"resources", "list", "--templates"}},
		{"prompts/list", []string{"prompts", "list"}},
		{"prompts/get", []string{"prompts", "get", "greet", `{"name":"Ada"}`}},
		{"completion/complete", []string{"complete", "--prompt", "greet", "style", "a"}},
	}
	for _, c := range commands {
		for _, how := range []string{"signal", "timeout"} {
			t.Run(c.method+"/"+how, func(t *testing.T) {
				t.Parallel()
				rec := recordFile(t)
				args := append(append([]string(nil), c.args...), "--stdio", server(rec, "-stall", c.method))
				held := func(r mcptest.Record) bool { return r.Kind == mcptest.Received && r.Method == c.method }
				var r result
				if how == "timeout" {
					// Room for a loaded machine to start the server, so that
					// the request is what times out.
					r = runAndon(t, append(args, "--timeout", "2s")...)
					r.check(t, exitTimeout)
				} else {
					r = signalWhen(t, rec, held, os.Interrupt, args...)
					r.check(t, exitSignal)
				}
				recs := readRecords(t, rec)
				req := find(recs, held)
				if req == nil {
					t.Fatalf("the server received no %s; records:\n%s", c.method, dump(recs))
				}
				waitForRecord(t, rec, func(r mcptest.Record) bool {
					return r.Kind == mcptest.Received && r.Method == "notifications/cancelled"
				})
				if n := cancelNotices(readRecords(t, rec), req.ID); n != 1 {
					t.Errorf("%d notifications/cancelled naming %s %s, want 1; records:\n%s", n, c.method, req.ID, dump(readRecords(t, rec)))
				}
			})
		}
	}
}

// signalWhen starts andon with args, waits until the server (recording to
// rec) has recorded what matches, sends sig, and waits for andon to exit.
func signalWhen(t *testing.T, rec string, match func(mcptest.Record) bool, sig os.Signal, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*patience)
	defer cancel()
	cmd := exec.CommandContext(ctx, andonBin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitForRecord(t, rec, match)
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	return result{code: exitCode(t, cmd.Wait()), stdout: stdout.String(), stderr: stderr.String()}
}

// TestSurfaceHelp: each surface command and verb has -h, on stdout, exit 0.
func TestSurfaceHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"resources", "-h"}, {"resources", "list", "-h"}, {"resources", "read", "-h"},
		{"prompts", "help"}, {"prompts", "list", "-h"}, {"prompts", "get", "-h"}, {"complete", "-h"},
	} {
		r := runAndon(t, args...)
		r.check(t, exitOK)
		if !strings.Contains(r.stdout, "usage: andon "+args[0]) || !strings.Contains(r.stdout, "Exit codes:") {
			t.Errorf("andon %v: no usage and exit codes on stdout:\n%s", args, r.stdout)
		}
	}
	if r := runAndon(t, "resources", "read", "-h"); !strings.Contains(r.stdout, "-max-size") || !strings.Contains(r.stdout, "-timeout") {
		t.Errorf("resources read -h lacks --max-size or --timeout:\n%s", r.stdout)
	}
}
