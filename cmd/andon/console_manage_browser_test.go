package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/andonhq/andon/api"
)

// TestConsoleManagesTools drives the servers and tools page of the console
// in headless Chromium, from the keyboard. With serve's admin token: Import
// lists the demo server's tools and says how many; unchecking a tool's
// Enabled and choosing another effect for a tool apply at once, and the API
// then describes the tools so; a change the server refuses puts its control
// back and says why. With a viewer's token: the same tables, no control,
// and a note that an admin token is needed — while the API itself refuses
// the viewer's change.
func TestConsoleManagesTools(t *testing.T) {
	t.Parallel()
	chromium := needChromium(t)
	dir := t.TempDir()
	env := processEnv(t)
	writeScript(t, dir, "andon.yaml", `servers:
  - name: demo
    command: ["@andon", "mcptest", "serve"]
    env: {GORACE: "atexit_sleep_ms=0"}
    requires_approval: false
    effects:
      slow: read_only
`)
	serve, addr := startServeAPI(t, dir, env)
	base := "http://" + addr
	tokenText, err := os.ReadFile(filepath.Join(dir, "andon.token"))
	if err != nil {
		t.Fatal(err)
	}
	admin := &api.Client{BaseURL: base, Token: strings.TrimSpace(string(tokenText))}
	viewerToken := createToken(t, dir, env, "viewer", "v")
	viewer := &api.Client{BaseURL: base, Token: viewerToken}

	ctx, do := openBrowser(t, chromium, 1200, 1000, serve)
	poll := func(expr string) chromedp.Action[chromedp.Void] { return chromedp.Poll[chromedp.Void](expr) }
	text := func(id string) string { return fmt.Sprintf(`document.getElementById(%q).textContent`, id) }
	control := func(key string) chromedp.CSS { return chromedp.CSS(fmt.Sprintf(`[data-key=%q]`, key)) }
	toolRow := func(name string) string {
		return fmt.Sprintf(`document.querySelector('#tools-table tr[data-tool=%q]')`, name)
	}

	do("opening servers and tools with the admin token",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.ID("token-input")),
		chromedp.SendKeys(chromedp.ID("token-input"), admin.Token),
		chromedp.Click(chromedp.ID("token-button")),
		chromedp.WaitVisible(chromedp.ID("start-form")),
		chromedp.Click(chromedp.ID("nav-servers")),
		chromedp.WaitVisible(chromedp.ID("servers-table")),
		chromedp.WaitVisible(control("import:demo")),
		poll(`document.getElementById('manage-note').hidden`))

	do("importing the demo server's tools, from the keyboard",
		chromedp.Focus(control("import:demo")),
		chromedp.KeyEvent("\r"),
		poll(`/^Imported [0-9]+ tools from demo[.]$/.test(`+text("import-status")+`)`),
		poll(toolRow("mcp_demo_echo")+` !== null && `+toolRow("mcp_demo_slow")+` !== null`),
		// The tables came again; the focus stayed on the button.
		poll(`document.activeElement.dataset.key === 'import:demo'`))
	imported, err := admin.Tools(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	n := len(imported)
	do("seeing what the import found",
		poll(fmt.Sprintf(`%s === 'Imported %d tools from demo.'`, text("import-status"), n)),
		poll(fmt.Sprintf(`document.querySelector('#servers-table tr[data-server="demo"]').children[4].textContent === '%d'`, n)),
		poll(fmt.Sprintf(`document.querySelectorAll('#tools-table tbody tr').length === %d`, n)))

	// Every control is labelled with what it changes, of which tool or
	// server: the button, and 3 controls for each tool.
	unlabelled, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
		const cs = [...document.querySelectorAll('#servers-view table :is(input, select, button)')];
		if (cs.length !== 1 + 3 * `+fmt.Sprint(n)+`) return ['found ' + cs.length + ' controls'];
		return cs.filter((c) => {
			const row = c.closest('tr');
			const label = c.getAttribute('aria-label') || '';
			return !label.includes(row.dataset.tool || row.dataset.server) || c.disabled;
		}).map((c) => c.outerHTML);
	})()`))
	if err != nil || len(unlabelled) > 0 {
		t.Errorf("controls without a label naming their tool or server, or disabled (%v): %q", err, unlabelled)
	}

	do("disabling mcp_demo_echo",
		poll(`document.querySelector('[data-key="enabled:mcp_demo_echo"]').checked`),
		chromedp.Focus(control("enabled:mcp_demo_echo")),
		chromedp.KeyEvent(" "),
		poll(toolRow("mcp_demo_echo")+`.querySelector('.row-status').textContent === 'Saved: disabled.'`),
		poll(text("tools-announce")+` === 'mcp_demo_echo: saved, disabled.'`),
		poll(`!document.querySelector('[data-key="enabled:mcp_demo_echo"]').checked`))
	do("making mcp_demo_slow an idempotent write",
		poll(`document.querySelector('[data-key="effect:mcp_demo_slow"]').value === 'read_only'`),
		chromedp.Focus(control("effect:mcp_demo_slow")),
		chromedp.KeyEvent(kb.ArrowDown),
		poll(toolRow("mcp_demo_slow")+`.querySelector('.row-status').textContent === 'Saved: effect idempotent write.'`),
		poll(toolRow("mcp_demo_slow")+`.textContent.includes('(operator)')`))

	t.Logf("screenshot of the servers and tools page: %s", screenshot(ctx, t, "servers-page.png"))

	// The page told the truth: the API describes the tools so.
	tools, err := admin.Tools(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]api.Tool{}
	for _, tool := range tools {
		got[tool.Name] = tool
	}
	if echo := got["mcp_demo_echo"]; echo.Enabled || echo.UpdatedBy == "" {
		t.Errorf("mcp_demo_echo through the API: %+v, want disabled by an operator", echo)
	}
	if slow := got["mcp_demo_slow"]; slow.Effect != "idempotent_write" || slow.EffectSource != "operator" || !slow.Enabled {
		t.Errorf("mcp_demo_slow through the API: %+v, want an enabled idempotent write, the operator's", slow)
	}

	// The token loses its rights under the open page (here: the tab now
	// holds a viewer's): the server refuses the change, and the checkbox
	// goes back to the server's value.
	do("a change the server refuses",
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`sessionStorage.setItem('andon.token', %q)`, viewerToken)),
		chromedp.Focus(control("approval:mcp_demo_slow")),
		chromedp.KeyEvent(" "),
		poll(toolRow("mcp_demo_slow")+`.querySelector('.row-status.error') !== null`),
		poll(text("tools-announce")+`.startsWith('mcp_demo_slow: not saved')`),
		poll(`!document.querySelector('[data-key="approval:mcp_demo_slow"]').checked`))
	refused, err := chromedp.Run(ctx, chromedp.Evaluate[string](toolRow("mcp_demo_slow")+`.querySelector('.row-status').textContent`))
	if err != nil || !strings.Contains(refused, "admin") {
		t.Errorf("the refused change reads %q (%v), want the server's reason, which names the role needed", refused, err)
	}

	do("opening servers and tools with the viewer's token",
		chromedp.Reload(), // the tab keeps the viewer's token
		poll(`location.hash === '#/servers'`),
		poll(toolRow("mcp_demo_echo")+` !== null && `+toolRow("mcp_demo_slow")+` !== null`),
		poll(`!document.getElementById('manage-note').hidden`))
	seen, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[
		document.getElementById('manage-note').textContent,
		String(document.querySelectorAll('#servers-view :is(input, select, button):not([disabled])').length),
		`+toolRow("mcp_demo_echo")+`.children[4].textContent,
		`+toolRow("mcp_demo_slow")+`.textContent,
		String([...document.querySelectorAll('#servers-view th')].filter((th) => !th.hidden).length)]`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(seen[0], "needs an admin token") || !strings.Contains(seen[0], "viewer") {
		t.Errorf("the viewer's note reads %q, want it to say an admin token is needed", seen[0])
	}
	if seen[1] != "0" {
		t.Errorf("the viewer has %s usable controls on the page, want none", seen[1])
	}
	if seen[2] != "no" {
		t.Errorf("the viewer's mcp_demo_echo is enabled: %q, want no", seen[2])
	}
	if !strings.Contains(seen[3], "idempotent write (operator)") {
		t.Errorf("the viewer's row of mcp_demo_slow reads %q, want the operator's effect", seen[3])
	}
	if seen[4] != "12" {
		t.Errorf("the viewer sees %s column headers, want the 12 of the read-only tables", seen[4])
	}

	// Not that the page is what stops a viewer: the API refuses.
	enable := true
	_, err = viewer.PatchTool(ctx, "mcp_demo_echo", &api.ToolPatch{Enabled: &enable})
	var apiErr *api.Error
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusForbidden {
		t.Errorf("a viewer's PATCH: %v, want 403", err)
	}
	if _, err := viewer.ImportServer(ctx, "demo"); !errors.As(err, &apiErr) || apiErr.Status != http.StatusForbidden {
		t.Errorf("a viewer's import: %v, want 403", err)
	}
	tools, err = admin.Tools(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools {
		if tool.Name == "mcp_demo_echo" && tool.Enabled || tool.Name == "mcp_demo_slow" && tool.RequiresApproval {
			t.Errorf("%s changed after the refusals: %+v", tool.Name, tool)
		}
	}
}

// createToken creates a token with `andon token create` on the database in
// dir, with the deployment's environment, and returns it.
func createToken(t *testing.T, dir string, env []string, role, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*patience)
	defer cancel()
	cmd := exec.CommandContext(ctx, andonBin, "token", "create", "--role", role, "--name", name, "--db", filepath.Join(dir, "andon.db"))
	cmd.Dir, cmd.Env = dir, env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("andon token create: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}
