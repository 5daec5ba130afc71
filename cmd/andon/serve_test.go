package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp/mcptest"
	"github.com/andonhq/andon/model/script"
)

// serveProc is an `andon serve` running as a subprocess in its own
// directory, on a free loopback port.
type serveProc struct {
	t      *testing.T
	dir    string
	addr   string
	cmd    *exec.Cmd
	stderr *lockedBuffer
	exited chan struct{}
	err    error // cmd.Wait's, once exited is closed
}

// lockedBuffer collects a running process's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// freeAddr returns a loopback address nothing listens on (as far as anyone
// can tell: the port was free a moment ago).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// startServe runs `andon serve` in dir with its database, key and config
// there, and waits until its API answers. If config is not empty it is
// written to dir/andon.yaml first; otherwise serve writes its demo. The
// server is killed when the test ends, unless stop stopped it. flags are
// added to serve's.
func startServe(t *testing.T, dir, config string, flags ...string) *serveProc {
	t.Helper()
	if config != "" {
		if err := os.WriteFile(filepath.Join(dir, "andon.yaml"), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A port picked as free may be taken by the time serve listens on it;
	// then try another.
	for attempt := 0; ; attempt++ {
		p := &serveProc{t: t, dir: dir, addr: freeAddr(t), stderr: &lockedBuffer{}, exited: make(chan struct{})}
		p.cmd = exec.Command(andonBin, append([]string{"serve", "--addr", p.addr, "--db", filepath.Join(dir, "andon.db"),
			"--key-file", filepath.Join(dir, "andon.key"), "--config", filepath.Join(dir, "andon.yaml")}, flags...)...)
		p.cmd.Dir = dir
		p.cmd.Stdout, p.cmd.Stderr = p.stderr, p.stderr
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			p.err = p.cmd.Wait()
			close(p.exited)
		}()
		t.Cleanup(func() {
			select {
			case <-p.exited:
			default:
				p.cmd.Process.Kill()
				<-p.exited
			}
		})
		if p.waitHealthy() {
			return p
		}
		if attempt < 3 && strings.Contains(p.stderr.String(), "address already in use") {
			continue
		}
		t.Fatalf("andon serve did not come up; output:\n%s", p.stderr.String())
	}
}

// waitHealthy polls the health endpoint until it answers, or serve exits.
func (p *serveProc) waitHealthy() bool {
	c := &api.Client{BaseURL: "http://" + p.addr, HTTP: &http.Client{Timeout: time.Second}}
	deadline := time.Now().Add(2 * patience) // a race-enabled build starts slowly
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return false
		default:
		}
		if c.Health(context.Background()) == nil {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// client returns an API client of the server, for polling, with the admin
// token serve wrote on its first start.
func (p *serveProc) client() *api.Client {
	return &api.Client{BaseURL: "http://" + p.addr, HTTP: &http.Client{Timeout: patience}, Token: readToken(p.t, p.dir)}
}

// readToken returns the API token that serve wrote to dir/andon.token.
func readToken(tb testing.TB, dir string) string {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "andon.token"))
	if err != nil {
		tb.Fatalf("reading the API token serve wrote: %v", err)
	}
	return strings.TrimSpace(string(data))
}

// stop interrupts serve as Ctrl-C does, and checks that it stops cleanly.
func (p *serveProc) stop() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		p.t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(2 * patience):
		p.cmd.Process.Kill()
		<-p.exited
		p.t.Fatalf("andon serve did not stop on SIGINT; output:\n%s", p.stderr.String())
	}
	if code := exitCode(p.t, p.err); code != exitOK {
		p.t.Errorf("andon serve exited %d after SIGINT, want 0; output:\n%s", code, p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), "andon: stopped") {
		p.t.Errorf("andon serve did not say it stopped; output:\n%s", p.stderr.String())
	}
}

// andon runs the andon binary against this server (--api is added), in its
// directory.
func (p *serveProc) andon(args ...string) result {
	p.t.Helper()
	return runAndonIn(p.t, p.dir, append(args, "--api", p.addr)...)
}

// runAndonIn runs the andon binary in dir and waits for it.
func runAndonIn(t *testing.T, dir string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*patience)
	defer cancel()
	cmd := exec.CommandContext(ctx, andonBin, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return result{code: exitCode(t, err), stdout: stdout.String(), stderr: stderr.String()}
}

// testConfig is an andon.yaml with one server, "e2e": this andon binary's
// mcptest server over stdio, recording to record. Its tools are not
// classified, so each is a non-idempotent write.
func testConfig(record string, approval bool) string {
	return fmt.Sprintf(`servers:
  - name: e2e
    command: ["@andon", "mcptest", "serve", "-record", %q]
    env: {GORACE: "atexit_sleep_ms=0"}
    requires_approval: %v
`, record, approval)
}

// writeScript writes a model script into dir and returns its path.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const (
	slowScriptYAML = `steps:
  - tool_calls:
      - name: mcp_e2e_slow
        arguments: {ms: 60000}
  - text: The slow tool finished.
`
	echoScriptYAML = `steps:
  - tool_calls:
      - name: mcp_e2e_echo
        arguments: {text: hello from a run}
  - text: Echoed.
`
)

// showRun runs `andon show --json RUN` and decodes it.
func (p *serveProc) showRun(id string) *api.RunDetail {
	p.t.Helper()
	r := p.andon("show", "--json", id)
	r.check(p.t, exitOK)
	var d api.RunDetail
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		p.t.Fatalf("andon show --json printed no run: %v\n%s", err, r.stdout)
	}
	return &d
}

// waitRun polls the API until done says the run is where the test wants it.
func (p *serveProc) waitRun(id string, done func(*api.RunDetail) bool) *api.RunDetail {
	p.t.Helper()
	c := p.client()
	deadline := time.Now().Add(patience)
	for {
		d, err := c.GetRun(context.Background(), id)
		if err != nil {
			p.t.Fatalf("GetRun(%s): %v", id, err)
		}
		if done(d) {
			return d
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("run %s never got there: %+v", id, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkSlowCallCancelled waits until the server's slow tool saw its
// cancellation, and checks that the server received notifications/cancelled
// naming that tools/call's id: the cancel crossed the stdio boundary.
func checkSlowCallCancelled(t *testing.T, rec string) {
	t.Helper()
	waitForRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolCancelled && r.Tool == "slow" })
	recs := readRecords(t, rec)
	started := find(recs, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted && r.Tool == "slow" })
	if started == nil {
		t.Fatalf("the slow tool never started; records:\n%s", dump(recs))
	}
	if find(recs, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolCancelled && r.ID == started.ID }) == nil {
		t.Errorf("no tool_cancelled record for request %s; records:\n%s", started.ID, dump(recs))
	}
	notice := find(recs, func(r mcptest.Record) bool {
		if r.Kind != mcptest.Received || r.Method != "notifications/cancelled" {
			return false
		}
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		return json.Unmarshal(r.Params, &p) == nil && string(p.RequestID) == started.ID
	})
	if notice == nil {
		t.Errorf("the server received no notifications/cancelled with requestId %s; records:\n%s", started.ID, dump(recs))
	}
}

func hasStatus(s agent.Status) func(*api.RunDetail) bool {
	return func(d *api.RunDetail) bool { return d.Run.Status == string(s) }
}

// TestServeCancelEndToEnd is the end-to-end test: a run calls
// mcptest's slow tool over stdio, `andon cancel` cancels it through the
// API, the server records the cancellation, and the run ends cancelled with
// its write fence stamped.
func TestServeCancelEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := filepath.Join(dir, "records.jsonl")
	p := startServe(t, dir, testConfig(rec, false))
	slow := writeScript(t, dir, "slow.yaml", slowScriptYAML)

	r := p.andon("run", "--script", slow)
	r.check(t, exitOK)
	id := strings.TrimSpace(r.stdout)
	if !strings.HasPrefix(id, "run_") {
		t.Fatalf("andon run printed %q, not a run id", r.stdout)
	}
	waitForRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted && r.Tool == "slow" })

	r = p.andon("cancel", id)
	r.check(t, exitOK)
	if !strings.HasPrefix(r.stdout, id+": cancelled in ") {
		t.Errorf("andon cancel printed %q", r.stdout)
	}

	// The server was told: notifications/cancelled naming the tools/call,
	// and the tool saw it and stopped.
	checkSlowCallCancelled(t, rec)

	// The run is cancelled, the cancelled call is its last step, and the
	// fence stays stamped: the write may have happened.
	p.waitRun(id, func(d *api.RunDetail) bool { return len(d.Steps) >= 2 })
	d := p.showRun(id)
	if d.Run.Status != "cancelled" || d.Run.Reason != "cancelled" {
		t.Errorf("run status %s (%s), want cancelled", d.Run.Status, d.Run.Reason)
	}
	if d.Run.PendingEffect != string(agent.EffectNonIdempotentWrite) {
		t.Errorf("pending_effect %q, want %s: the fence must stay stamped", d.Run.PendingEffect, agent.EffectNonIdempotentWrite)
	}
	last := d.Steps[len(d.Steps)-1]
	if last.Kind != "tool" || last.Tool != "mcp_e2e_slow" || last.Outcome != "cancelled" {
		t.Errorf("last step %+v, want the slow tool, cancelled", last)
	}
	// No HTTP left, but the call is audited all the same: one tool_call
	// row, which says how it ended.
	if len(d.Audit) != 1 || d.Audit[0].Action != string(audit.ActionToolCall) || d.Audit[0].Host != "e2e" ||
		d.Audit[0].Reason != "cancelled: run cancelled" || !strings.HasPrefix(d.Audit[0].Path, "mcp_e2e_slow step=1 call=1 args=sha256:") {
		t.Errorf("audit rows of a stdio run: %+v, want its one tool_call, cancelled", d.Audit)
	}

	// The text of show and runs says so too.
	r = p.andon("show", id)
	r.check(t, exitOK)
	for _, want := range []string{"status: cancelled", "write fence: non_idempotent_write", "tool mcp_e2e_slow → cancelled", "tool_call server e2e: mcp_e2e_slow step=1", "(cancelled: run cancelled"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("andon show does not say %q:\n%s", want, r.stdout)
		}
	}
	r = p.andon("runs")
	r.check(t, exitOK)
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); len(lines) != 2 ||
		!strings.HasPrefix(lines[0], "RUN") || !strings.Contains(lines[1], id) ||
		!strings.Contains(lines[1], "cancelled") || !strings.Contains(lines[1], "non_idempotent_write") {
		t.Errorf("andon runs:\n%s", r.stdout)
	}
	r = p.andon("runs", "--status", "running", "--json")
	r.check(t, exitOK)
	if strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("andon runs --status running --json: %s", r.stdout)
	}

	// Cancelled is terminal: a second cancel is refused.
	r = p.andon("cancel", id)
	r.check(t, exitFailure)
	if !strings.Contains(r.stderr, "already finished") {
		t.Errorf("second cancel: %q", r.stderr)
	}
	r = p.andon("show", "run_nosuchrun")
	r.check(t, exitFailure)
	if r.stderr != "andon: no such run\n" {
		t.Errorf("show of an unknown run: %q", r.stderr)
	}

	p.stop()
}

// TestRunWait: `andon run --wait` follows a run to its end, printing its
// steps; Ctrl-C cancels the run through the API and andon exits 130.
func TestRunWait(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := filepath.Join(dir, "records.jsonl")
	p := startServe(t, dir, testConfig(rec, false))
	t.Cleanup(p.stop) // after the subtests

	t.Run("completes", func(t *testing.T) {
		t.Parallel()
		echo := writeScript(t, dir, "echo.yaml", echoScriptYAML)
		r := runAndonIn(t, dir, "run", "--wait", "--api", p.addr, "--script", echo)
		r.check(t, exitOK)
		for _, want := range []string{"1 model: (asks for tools)", "2 tool mcp_e2e_echo → ok", "hello from a run", "3 model: Echoed.", ": completed (completed)"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("andon run --wait does not print %q:\n%s", want, r.stdout)
			}
		}
	})

	t.Run("Ctrl-C cancels the run", func(t *testing.T) {
		t.Parallel()
		slow := writeScript(t, dir, "slow.yaml", slowScriptYAML)
		ctx, cancel := context.WithTimeout(t.Context(), 2*patience)
		defer cancel()
		cmd := exec.CommandContext(ctx, andonBin, "run", "--wait", "--api", p.addr, "--script", slow)
		cmd.Dir = dir // where serve wrote its token
		var stdout, stderr lockedBuffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitForRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted && r.Tool == "slow" })
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		r := result{code: exitCode(t, cmd.Wait()), stdout: stdout.String(), stderr: stderr.String()}
		r.check(t, exitSignal)
		m := regexp.MustCompile(`andon: run (run_[0-9a-f]+) started`).FindStringSubmatch(r.stderr)
		if m == nil {
			t.Fatalf("no run id in stderr:\n%s", r.stderr)
		}
		id := m[1]
		if !strings.Contains(r.stderr, "andon: cancelled run "+id) || !strings.Contains(r.stdout, id+": cancelled") {
			t.Errorf("andon run --wait did not report the cancel:\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
		}
		d := p.waitRun(id, func(d *api.RunDetail) bool { return len(d.Steps) >= 2 })
		if last := d.Steps[len(d.Steps)-1]; d.Run.Status != "cancelled" || last.Outcome != "cancelled" {
			t.Errorf("run %+v, last step %+v; want cancelled", d.Run, last)
		}
		checkSlowCallCancelled(t, rec)
	})
}

// TestApproveThroughTheCLI: a server whose tools need approval; the run
// waits, andon approve lets it go on, andon deny refuses the call.
func TestApproveThroughTheCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := filepath.Join(dir, "records.jsonl")
	p := startServe(t, dir, testConfig(rec, true))
	echo := writeScript(t, dir, "echo.yaml", echoScriptYAML)

	// run --wait stops following at the approval, successfully.
	r := p.andon("run", "--wait", "--script", echo)
	r.check(t, exitOK)
	m := regexp.MustCompile(`(?m)^(run_[0-9a-f]+): waiting_for_approval$`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("andon run --wait did not stop at the approval:\n%s", r.stdout)
	}
	id := m[1]
	if recs, _ := mcptest.ReadRecords(rec); find(recs, func(r mcptest.Record) bool { return r.Method == "tools/call" }) != nil {
		t.Fatal("the tool was called before it was approved")
	}
	r = p.andon("approve", id)
	r.check(t, exitOK)
	if !strings.HasPrefix(r.stdout, id+": ") {
		t.Errorf("andon approve printed %q", r.stdout)
	}
	d := p.waitRun(id, hasStatus(agent.StatusCompleted))
	if len(d.Steps) != 4 || d.Steps[1].Kind != "approval" || d.Steps[1].Outcome != "ok" || d.Steps[2].Outcome != "ok" {
		t.Errorf("steps %+v", d.Steps)
	}
	waitForRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolFinished && r.Tool == "echo" })
	// Not waiting any more.
	r = p.andon("approve", id)
	r.check(t, exitFailure)

	// Deny: the call is never made, and the model is told.
	r = p.andon("run", "--script", echo)
	r.check(t, exitOK)
	denied := strings.TrimSpace(r.stdout)
	p.waitRun(denied, hasStatus(agent.StatusWaitingForApproval))
	r = p.andon("deny", denied)
	r.check(t, exitOK)
	d = p.waitRun(denied, hasStatus(agent.StatusCompleted))
	if len(d.Steps) != 4 || d.Steps[1].Outcome != "denied" || d.Steps[2].Outcome != "denied" {
		t.Errorf("steps %+v", d.Steps)
	}
	calls := 0
	for _, r := range readRecords(t, rec) {
		if r.Method == "tools/call" {
			calls++
		}
	}
	if calls != 1 {
		t.Errorf("%d tools/call, want 1 (the approved one)", calls)
	}
	p.stop()
}

// TestRunCommandsWithoutServer: with no andon serve up, every command that
// needs one says so, naming `andon serve`, and exits 3.
func TestRunCommandsWithoutServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	echo := writeScript(t, dir, "echo.yaml", echoScriptYAML)
	addr := freeAddr(t)
	for _, args := range [][]string{
		{"run", "--script", echo},
		{"run", "--wait", "--script", echo},
		{"runs"},
		{"show", "run_x"},
		{"cancel", "run_x"},
		{"approve", "run_x"},
		{"deny", "run_x"},
		{"answer", "run_x", "--field", "name=x"},
		{"decline", "run_x"},
	} {
		r := runAndonIn(t, dir, append(args, "--api", addr)...)
		r.check(t, exitTransport)
		if r.stderr != "andon: no andon serve answers on "+addr+" (start one with: andon serve)\n" {
			t.Errorf("andon %v: stderr %q", args, r.stderr)
		}
	}
}

// TestServeRefusesNonLoopback: the API speaks plain HTTP, so its tokens
// would cross the network in clear text; serve refuses an address off
// loopback, before it writes or opens anything.
func TestServeRefusesNonLoopback(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, addr := range []string{"0.0.0.0:7700", "[::]:7700", ":7700", "192.0.2.1:7700", "example.com:7700", "no-port"} {
		r := runAndonIn(t, dir, "serve", "--addr", addr)
		r.check(t, exitUsage)
		if !strings.HasPrefix(r.stderr, "andon: serve: --addr "+fmt.Sprintf("%q", addr)) {
			t.Errorf("--addr %s: stderr %q", addr, r.stderr)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refused serve left files behind: %v", entries)
	}
}

// TestServeFirstStart: in an empty directory, serve writes the demo config
// and script, and the README's walkthrough works: start the demo run,
// cancel it, see the cancelled tool step.
func TestServeFirstStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startServe(t, dir, "")
	if !strings.Contains(p.stderr.String(), "wrote a demo config") {
		t.Errorf("serve did not say it wrote the demo:\n%s", p.stderr.String())
	}
	// The config is where an operator adds a server's headers: the user's
	// alone, as serve wrote it, and the script beside it too.
	for _, name := range []string{"andon.yaml", "demo-slow.yaml"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("serve wrote %s with mode %v (%v), want 0600", name, fi.Mode().Perm(), err)
		}
	}
	cfg, err := catalogue.Load(filepath.Join(dir, "andon.yaml"))
	if err != nil {
		t.Fatalf("the demo config does not load: %v", err)
	}
	if len(cfg.Servers) != 1 || cfg.Servers[0].Name != "demo" || cfg.Servers[0].Command[0] != catalogue.AndonExecutable {
		t.Errorf("demo config %+v", cfg)
	}
	// The demo script's minute-long call fits in its budget: only a cancel
	// ends it early.
	if b := cfg.Servers[0].ToolBudget("slow"); b.Timeout <= time.Minute {
		t.Errorf("the demo's slow tool has a budget of %v: the demo script's call of a minute would time out", b.Timeout)
	}
	data, err := os.ReadFile(filepath.Join(dir, "demo-slow.yaml"))
	if err != nil {
		t.Fatalf("no demo script: %v", err)
	}
	s, err := script.Parse(data)
	if err != nil {
		t.Fatalf("the demo script does not parse: %v", err)
	}
	if len(s.Steps) == 0 || len(s.Steps[0].ToolCalls) != 1 || s.Steps[0].ToolCalls[0].Name != "mcp_demo_slow" {
		t.Errorf("demo script %+v", s)
	}

	// The walkthrough, with the paths the README uses (relative to dir).
	r := p.andon("run", "--script", "demo-slow.yaml")
	r.check(t, exitOK)
	id := strings.TrimSpace(r.stdout)
	p.waitRun(id, func(d *api.RunDetail) bool { return len(d.Steps) >= 1 })
	r = p.andon("runs")
	r.check(t, exitOK)
	if !strings.Contains(r.stdout, id) {
		t.Errorf("andon runs does not list %s:\n%s", id, r.stdout)
	}
	r = p.andon("cancel", id)
	r.check(t, exitOK)
	p.waitRun(id, func(d *api.RunDetail) bool { return len(d.Steps) >= 2 })
	r = p.andon("show", id)
	r.check(t, exitOK)
	for _, want := range []string{"status: cancelled (cancelled)", "tool mcp_demo_slow → cancelled", "write fence: clear"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("andon show does not say %q:\n%s", want, r.stdout)
		}
	}
	// The demo server was told, and says so in the record the demo config
	// has it write (the README greps it).
	waitForRecord(t, filepath.Join(dir, "demo-record.jsonl"), func(r mcptest.Record) bool {
		return r.Kind == mcptest.Received && r.Method == "notifications/cancelled"
	})
	waitForRecord(t, filepath.Join(dir, "demo-record.jsonl"), func(r mcptest.Record) bool {
		return r.Kind == mcptest.ToolCancelled && r.Tool == "slow"
	})
	p.stop()

	// A second start keeps the config as the operator left it.
	edited := "# edited\n" + string(mustRead(t, filepath.Join(dir, "andon.yaml")))
	if err := os.WriteFile(filepath.Join(dir, "andon.yaml"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	p = startServe(t, dir, "")
	if strings.Contains(p.stderr.String(), "wrote a demo config") {
		t.Errorf("the second start wrote the demo again:\n%s", p.stderr.String())
	}
	if got := string(mustRead(t, filepath.Join(dir, "andon.yaml"))); got != edited {
		t.Errorf("the config changed on the second start:\n%s", got)
	}
	// The run from the first start is still there.
	if d := p.showRun(id); d.Run.Status != "cancelled" {
		t.Errorf("after a restart the run is %s", d.Run.Status)
	}
	p.stop()
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestServeStopMidWrite: Ctrl-C on serve while a run's non-idempotent write
// is in flight stops serve cleanly, and leaves the run as the reaper needs
// it: not settled, its fence stamped, the interrupted call not recorded as
// an outcome. After a restart the run is still there, unchanged.
func TestServeStopMidWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := filepath.Join(dir, "records.jsonl")
	p := startServe(t, dir, testConfig(rec, false))
	slow := writeScript(t, dir, "slow.yaml", slowScriptYAML)
	r := p.andon("run", "--script", slow)
	r.check(t, exitOK)
	id := strings.TrimSpace(r.stdout)
	waitForRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted && r.Tool == "slow" })
	p.stop()

	p = startServe(t, dir, "")
	d := p.showRun(id)
	if d.Run.Status != string(agent.StatusRunning) || d.Run.PendingEffect != string(agent.EffectNonIdempotentWrite) {
		t.Errorf("after a stop mid-write the run is %s with fence %q; want running (for the reaper) with the fence stamped",
			d.Run.Status, d.Run.PendingEffect)
	}
	for _, s := range d.Steps {
		if s.Kind == "tool" {
			t.Errorf("the interrupted call was recorded as a step: %+v", s)
		}
	}
	p.stop()
}

// TestServeAndWorkerWarnOfPlaintextCredentials: a config whose server has
// a credential in a static header, in a file others can read, makes serve
// and worker warn at start-up, naming the server and the header, never the
// value, with the vault's commands and chmod 600.
func TestServeAndWorkerWarnOfPlaintextCredentials(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const value = "sk-live-5e1f0c"
	config := "servers:\n  - name: tickets\n    url: http://127.0.0.1:9/mcp\n    headers: {Authorization: \"Bearer " + value + "\"}\n"
	path := filepath.Join(dir, "andon.yaml")
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil { // whatever the umask
		t.Fatal(err)
	}
	p := startServe(t, dir, "")
	serve := p.stderr.String()
	p.stop()
	// A worker warns before it opens its database: one it cannot reach
	// ends it right after.
	r := runAndonIn(t, dir, "worker", "--config", "andon.yaml", "--db", "postgres://127.0.0.1:1/andon")
	r.check(t, exitFailure)
	for _, out := range []struct{ who, log string }{{"serve", serve}, {"worker", r.stderr}} {
		for _, want := range []string{"level=WARN", "server=tickets", "header=Authorization", "plain text",
			"andon secret set tickets-authorization --placement bearer --host 127.0.0.1", "credential: tickets-authorization",
			`readable_by="group and others"`, "chmod 600 "} {
			if !strings.Contains(out.log, want) {
				t.Errorf("%s did not warn with %q:\n%s", out.who, want, out.log)
			}
		}
		if strings.Contains(out.log, value) {
			t.Errorf("%s logged the header's value:\n%s", out.who, out.log)
		}
	}
}
