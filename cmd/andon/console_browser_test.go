package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/mcp/mcptest"
)

// updateScreenshot, set to 1, makes TestConsoleInBrowser also write the run
// page's screenshot to docs/console.png (docs/walkthrough.md shows it).
const updateScreenshot = "ANDON_UPDATE_SCREENSHOT"

// needChromium returns the path of a Chromium for a browser test. Without
// one the test is skipped — or, under CI, fails.
func needChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no chromium to run the console's browser test; .ci/chromium installs it")
	}
	t.Skip("no chromium installed (apt-get install -y chromium, or .ci/chromium): skipping the console's browser test")
	return ""
}

// TestConsoleInBrowser is the browser test: andon serve with the
// demo config — its mcptest server reached over HTTP here, so that the
// call goes through egress and leaves an audit row — and the console in
// headless Chromium: start a run of the demo script (the slow tool) from
// the console, wait until the call is running, click Cancel, and see the
// run reach cancelled, the cancelled call in the timeline, and the audit
// row saying the request went out. The screenshot goes to the test's
// artifact directory.
func TestConsoleInBrowser(t *testing.T) {
	t.Parallel()
	chromium := needChromium(t)
	dir := t.TempDir()
	env := processEnv(t)

	// The demo's MCP server, over HTTP, recording what it does.
	rec := filepath.Join(dir, "mcp.jsonl")
	mcpProc := startAndon(t, dir, env, "mcptest", "serve", "-http", "127.0.0.1:0", "-record", rec)
	mcpProc.waitOutput("its endpoint", contains("http://"))
	var endpoint string
	for line := range strings.SplitSeq(mcpProc.out.String(), "\n") {
		if strings.HasPrefix(line, "http://") {
			endpoint = strings.TrimSpace(line)
			break
		}
	}
	config := fmt.Sprintf(`servers:
  - name: demo
    url: %s
    requires_approval: false
    effects:
      echo: read_only
      slow: read_only
`, endpoint)
	writeScript(t, dir, "andon.yaml", config)
	script := writeScript(t, dir, "demo-slow.yaml", demoScript)

	serve, addr := startServeAPI(t, dir, env)
	base := "http://" + addr
	// serve's first start made an admin token; the console asks for it.
	tokenText, err := os.ReadFile(filepath.Join(dir, "andon.token"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tokenText))

	ctx, do := openBrowser(t, chromium, 1200, 1100, serve)
	poll := func(expr string) chromedp.Action[chromedp.Void] { return chromedp.Poll[chromedp.Void](expr) }

	do("opening the console, which asks for a token",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.ID("token-input")))
	do("giving the console the token",
		chromedp.SendKeys(chromedp.ID("token-input"), token),
		chromedp.Click(chromedp.ID("token-button")),
		chromedp.WaitVisible(chromedp.ID("start-form")))

	do("starting a run of the demo script",
		chromedp.WaitVisible(chromedp.ID("start-form")),
		chromedp.SetUploadFiles(chromedp.ID("start-file"), []string{script}),
		poll(`document.getElementById('start-script').value.includes('mcp_demo_slow')`),
		chromedp.Click(chromedp.ID("start-button")),
		poll(`location.hash.startsWith('#/runs/run_')`))
	hash, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash`))
	if err != nil {
		t.Fatal(err)
	}
	runID := strings.TrimPrefix(hash, "#/runs/")

	// Running, and the call under way: on the page, and at the server.
	do("waiting for the call to run",
		poll(`document.getElementById('run-status').textContent === 'running'`),
		poll(`document.getElementById('in-progress') !== null`))
	waitForRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolStarted && r.Tool == "slow" })

	do("cancelling",
		chromedp.WaitEnabled(chromedp.ID("cancel-button")),
		chromedp.Click(chromedp.ID("cancel-button")),
		poll(`document.getElementById('run-status').textContent === 'cancelled'`),
		poll(`document.getElementById('cancel-status').textContent.startsWith('Cancelled. The server took')`),
		poll(`document.querySelector('#timeline li.k-tool.o-cancelled') !== null`),
		poll(`document.querySelector('#audit-table tr[data-action="http_call_cancelled"]') !== null`))

	texts, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[
		document.querySelector('#timeline li.k-tool.o-cancelled').textContent,
		document.querySelector('#audit-table tr[data-action="http_call_cancelled"]').textContent,
		document.getElementById('cancel-status').textContent,
		document.getElementById('run-fence').textContent]`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(texts[0], "mcp_demo_slow") {
		t.Errorf("the cancelled step reads %q, want the slow tool named", texts[0])
	}
	if !strings.Contains(texts[1], "Sent: the request") {
		t.Errorf("the audit row reads %q, want it to say the request was sent", texts[1])
	}
	t.Logf("the page says: %s; fence: %s", texts[2], texts[3])

	// The page told the truth: the server saw the cancel, the run is
	// cancelled, and its audit row says the request left.
	waitForRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.ToolCancelled && r.Tool == "slow" })
	d, err := (&api.Client{BaseURL: base, Token: token}).GetRun(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	// The run's rows are its handshake's and listing's too (every row a
	// run causes names it); the cancelled call's is the one that matters.
	cancelledSent := slices.ContainsFunc(d.Audit, func(r api.AuditRow) bool { return r.Action == "http_call_cancelled" && r.Sent })
	if d.Run.Status != string(agent.StatusCancelled) || !cancelledSent {
		t.Errorf("the run through the API: %+v, audit %+v", d.Run, d.Audit)
	}

	path := screenshot(ctx, t, "run-page.png")
	t.Logf("screenshot of the run page: %s", path)
	if os.Getenv(updateScreenshot) == "1" {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "console.png"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("wrote docs/console.png")
	}

	// The page still follows the run's stream: serve stops all the same.
	serve.stop()
}

// screenshot saves the page as name in the test's artifact directory
// (kept with go test -artifacts) and returns its path; "" if it could not.
func screenshot(ctx context.Context, t *testing.T, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot: %v", err)
		return ""
	}
	path := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Logf("screenshot: %v", err)
		return ""
	}
	return path
}

// TestConsoleTokenAndApproval drives the console through a proxy that
// demands a bearer token for the API, as andon serve does once it has
// tokens: the console asks for the token in its form, keeps it in the tab
// (never a URL or a cookie) and sends it on every API request, the event
// stream included. Then a run of the demo script on a server whose tools
// need approval shows the call it waits on, with its arguments; Deny refuses
// the call, and the runs list shows the outcome.
func TestConsoleTokenAndApproval(t *testing.T) {
	t.Parallel()
	chromium := needChromium(t)
	dir := t.TempDir()
	writeScript(t, dir, "andon.yaml", `servers:
  - name: demo
    command: ["@andon", "mcptest", "serve"]
    env: {GORACE: "atexit_sleep_ms=0"}
    requires_approval: true
`)
	serve, addr := startServeAPI(t, dir, processEnv(t))
	serveToken, err := os.ReadFile(filepath.Join(dir, "andon.token"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}

	token := "console-test-" + hexToken(t)
	var mu sync.Mutex
	var problems []string
	unauthorized, streamed := 0, 0
	target, _ := url.Parse("http://" + addr)
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if strings.Contains(r.URL.String(), token) {
			problems = append(problems, "the token in a URL: "+r.URL.String())
		}
		if r.Header.Get("Cookie") != "" {
			problems = append(problems, "a cookie on "+r.URL.Path)
		}
		if strings.HasPrefix(r.URL.Path, "/v1/") {
			if r.Header.Get("Authorization") != "Bearer "+token {
				unauthorized++
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprint(w, `{"error":{"code":"unauthorized","message":"a token is needed"}}`)
				return
			}
			if r.URL.Path == "/v1/events" {
				streamed++
			}
			r.Header.Del("Authorization")
			if len(serveToken) > 0 {
				r.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(serveToken)))
			}
		}
		mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()

	ctx, do := openBrowser(t, chromium, 1200, 1000, serve)
	poll := func(expr string) chromedp.Action[chromedp.Void] { return chromedp.Poll[chromedp.Void](expr) }

	do("giving the console its token",
		chromedp.Navigate(proxy.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("token-input")),
		poll(`document.activeElement === document.getElementById('token-input')`),
		chromedp.SendKeys(chromedp.ID("token-input"), token),
		chromedp.Click(chromedp.ID("token-button")),
		chromedp.WaitVisible(chromedp.ID("start-form")),
		poll(`document.getElementById('live').textContent === 'Live'`))
	ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(
		`sessionStorage.getItem('andon.token') === %q && localStorage.length === 0 && document.cookie === ''`, token)))
	if err != nil || !ok {
		t.Errorf("the token is not kept in session storage alone (%v)", err)
	}

	do("starting a run from pasted script text",
		chromedp.SetValue(chromedp.ID("start-script"), demoScript),
		chromedp.Click(chromedp.ID("start-button")),
		poll(`location.hash.startsWith('#/runs/run_')`))
	hash, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash`))
	if err != nil {
		t.Fatal(err)
	}
	runID := strings.TrimPrefix(hash, "#/runs/")

	do("seeing the approval prompt",
		poll(`!document.getElementById('approval').hidden`),
		poll(`document.getElementById('approval-tool').textContent === 'mcp_demo_slow'`),
		poll(`document.getElementById('approval-args').textContent.includes('"ms": 60000')`),
		poll(`document.getElementById('approval-ref').textContent.includes('sha256:')`),
		poll(`document.getElementById('run-status').textContent === 'waiting for approval'`))
	do("denying the call, from the keyboard",
		chromedp.Focus(chromedp.ID("deny-button")),
		chromedp.KeyEvent("\r"),
		poll(`document.getElementById('approval').hidden`),
		poll(`document.querySelector('#timeline li.k-approval.o-denied') !== null`),
		poll(`document.querySelector('#timeline li.k-tool.o-denied') !== null`),
		// The model is told of the denial and goes on: the script ends.
		poll(`document.getElementById('run-status').textContent === 'completed'`))
	do("seeing the outcome in the runs list",
		chromedp.Click(chromedp.CSS(`a[href="#/runs"]`)),
		chromedp.WaitVisible(chromedp.ID("runs-table")),
		poll(fmt.Sprintf(`(document.querySelector('#runs-table tr[data-run=%q]') || {textContent: ''}).textContent.includes('completed')`, runID)))
	// Servers and tools: the demo server and its tools, which the run
	// imported.
	do("opening servers and tools",
		chromedp.Click(chromedp.ID("nav-servers")),
		chromedp.WaitVisible(chromedp.ID("servers-view")),
		poll(`document.querySelector('#servers-table tr[data-server="demo"]') !== null`),
		poll(`document.querySelector('#tools-table tr[data-tool="mcp_demo_slow"]') !== null`),
		poll(`document.querySelector('#tools-table tr[data-tool="mcp_demo_echo"]') !== null`),
		poll(`document.getElementById('servers-status').textContent === '' && document.getElementById('tools-status').textContent === ''`))

	mu.Lock()
	defer mu.Unlock()
	if unauthorized == 0 {
		t.Error("the console never asked the API without a token: the token form was not what a 401 showed")
	}
	if streamed == 0 {
		t.Error("the console's event stream never carried the token")
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// openBrowser starts headless chromium for the test, with a window of
// width × height, and returns its context and a function that does steps
// in it: a step that fails ends the test with a screenshot and serve's
// output.
func openBrowser(t *testing.T, chromium string, width, height int, serve *andonProc) (context.Context, func(what string, steps ...chromedp.Action[chromedp.Void])) {
	t.Helper()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox, // tests may run as root
		chromedp.DisableGPU,
		chromedp.WindowSize(width, height),
	)...)
	t.Cleanup(cancelAlloc)
	ctx, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(cancelBrowser)
	// The first action starts the browser, which lives as long as the
	// context of that action: ctx, not a step's.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx, func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		for i, step := range steps {
			stepCtx, cancel := context.WithTimeout(ctx, 2*patience)
			err := chromedp.Do(stepCtx, step)
			cancel()
			if err == nil {
				continue
			}
			shot := screenshot(ctx, t, "failed.png")
			t.Fatalf("%s, step %d: %v (screenshot %s); serve's output:\n%s", what, i+1, err, shot, serve.out.String())
		}
	}
}
