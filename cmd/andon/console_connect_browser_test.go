package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/andonhq/andon/internal/oauthtest"
)

// updateConnectScreenshot, set to 1, makes TestConsoleConnectInBrowser also
// write the servers page after Connect to docs/console-connect.png (the
// docs/oauth.md shows it).
const updateConnectScreenshot = "ANDON_UPDATE_SCREENSHOT"

// TestConsoleConnectInBrowser: andon serve with a server behind OAuth
// (oidc-provider and its resource server on loopback) and the console in
// headless Chromium. Importing the server's tools fails for want of a
// login, and the servers page says so; Connect sends the browser to the
// authorization server, which (its test user consenting at once) sends it
// back to andon, and the console's servers page shows the server
// connected, with its tools imported.
func TestConsoleConnectInBrowser(t *testing.T) {
	t.Parallel()
	chromium := needChromium(t)
	oa := oauthtest.Start(t, nil)
	dir := t.TempDir()
	writeScript(t, dir, "andon.yaml", fmt.Sprintf(`servers:
  - name: tickets
    url: %s
    auth: oauth
    requires_approval: false
`, oa.RS.URL))
	serve, addr := startServeAPI(t, dir, processEnv(t))
	base := "http://" + addr
	tokenText, err := os.ReadFile(filepath.Join(dir, "andon.token"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tokenText))

	ctx, do := openBrowser(t, chromium, 1200, 800, serve)
	poll := func(expr string) chromedp.Action[chromedp.Void] { return chromedp.Poll[chromedp.Void](expr) }
	row := `document.querySelector('#servers-table tr[data-server="tickets"]')`

	do("opening the console with its token",
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.ID("token-input")),
		chromedp.SendKeys(chromedp.ID("token-input"), token),
		chromedp.Click(chromedp.ID("token-button")),
		chromedp.WaitVisible(chromedp.ID("start-form")))
	do("importing the server's tools, which needs a login",
		chromedp.Click(chromedp.ID("nav-servers")),
		chromedp.WaitVisible(chromedp.ID("servers-view")),
		poll(row+` !== null`),
		chromedp.Click(chromedp.CSS(`#servers-table button[data-key="import:tickets"]`)),
		poll(row+`.textContent.includes('Needs a login: Connect, or andon auth login tickets.')`))
	screenshot(ctx, t, "servers-needs-login.png")

	do("connecting", chromedp.Click(chromedp.CSS(`#servers-table button[data-key="connect:tickets"]`)))
	// The page navigates to the authorization server and back: a poll
	// that runs while it does is cut off, and is run again on the page
	// that follows.
	back := poll(`location.origin === '` + base + `' && location.search === '' && location.hash === '#/servers' &&
		document.getElementById('import-status').textContent.includes('Connected tickets')`)
	for attempt := 1; ; attempt++ {
		_, err := chromedp.Run(ctx, back)
		if err == nil {
			break
		}
		if attempt == 10 || !strings.Contains(err.Error(), "navigated or closed") && !strings.Contains(err.Error(), "not attached") && !strings.Contains(err.Error(), "context") {
			t.Fatalf("coming back from the authorization server (attempt %d): %v; serve's output:\n%s", attempt, err, serve.out.String())
		}
	}
	do("seeing the server connected",
		poll(row+` !== null && !`+row+`.textContent.includes('Needs a login')`),
		poll(`document.querySelector('#tools-table tr[data-tool="mcp_tickets_echo"]') !== null`))

	oa.AS.Sync(t)
	if n := oa.AS.Grants("authorization_code"); n != 1 {
		t.Errorf("code exchanges = %d, want 1", n)
	}
	if oa.RS.Count(oauthtest.OutcomeOK) == 0 {
		t.Error("the resource server accepted no request after Connect")
	}
	// No token reached the page or serve's output.
	page, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range oa.RS.Tokens() {
		if strings.Contains(page, tok) || strings.Contains(serve.out.String(), tok) {
			t.Fatal("a token reached the console's page or serve's output")
		}
	}

	path := screenshot(ctx, t, "servers-connected.png")
	if os.Getenv(updateConnectScreenshot) == "1" && path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "console-connect.png"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("wrote docs/console-connect.png")
	}
	serve.stop()
}
