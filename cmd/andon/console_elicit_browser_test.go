package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/mcp/mcptest"
)

// elicitBrowserScript asks the operator for a name, a count and a secret.
const elicitBrowserScript = `steps:
  - tool_calls:
      - name: mcp_forms_elicit
        arguments:
          message: "Which environment, and how many replicas? <b>not bold</b>"
          log: "checking <i>capacity</i>"
          schema:
            type: object
            properties:
              environment: {type: string, enum: [staging, production], title: Environment}
              replicas: {type: integer, title: Replicas}
              token: {type: string, format: password, title: Deploy token}
            required: [environment, replicas]
  - text: Deployed.
`

// TestConsoleAnswersAQuestion is the browser test of elicitation:
// andon serve with an mcptest server that elicits (pinned to 2025-11-25,
// where the server is told of a cancel by the answer to its question), and
// the console in headless Chromium. A run whose server asks waits for
// input; the console shows the server's question as text and a field per
// property of its schema; the operator answers, the server gets the typed
// answer, and the run goes on with it. Another run is cancelled from the
// console while it waits: it ends cancelled, and the server is told
// (its question answered cancel, its call cancelled on the wire).
func TestConsoleAnswersAQuestion(t *testing.T) {
	t.Parallel()
	chromium := needChromium(t)
	dir := t.TempDir()
	rec := filepath.Join(dir, "mcp.jsonl")
	writeScript(t, dir, "andon.yaml", fmt.Sprintf(`servers:
  - name: forms
    command: ["@andon", "mcptest", "serve", "-elicit", "-record", %q]
    env: {GORACE: "atexit_sleep_ms=0"}
    protocol: "2025-11-25"
    requires_approval: false
`, rec))
	serve, addr := startServeAPI(t, dir, processEnv(t))
	token := readToken(t, dir)

	ctx, do := openBrowser(t, chromium, 1200, 1100, serve)
	poll := func(expr string) chromedp.Action[chromedp.Void] { return chromedp.Poll[chromedp.Void](expr) }
	startRun := func(what string) string {
		do(what,
			chromedp.Click(chromedp.ID("nav-runs")),
			chromedp.WaitVisible(chromedp.ID("start-form")),
			chromedp.SetValue(chromedp.ID("start-script"), elicitBrowserScript),
			chromedp.Click(chromedp.ID("start-button")),
			poll(`location.hash.startsWith('#/runs/run_')`))
		hash, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash`))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimPrefix(hash, "#/runs/")
	}

	do("opening the console with its token",
		chromedp.Navigate("http://"+addr+"/"),
		chromedp.WaitVisible(chromedp.ID("token-input")),
		chromedp.SendKeys(chromedp.ID("token-input"), token),
		chromedp.Click(chromedp.ID("token-button")),
		chromedp.WaitVisible(chromedp.ID("start-form")))

	answered := startRun("starting a run whose server asks")
	do("seeing the question",
		poll(`document.getElementById('run-status').textContent === 'waiting for input'`),
		poll(`!document.getElementById('question').hidden`),
		poll(`document.getElementById('question-server').textContent === 'forms'`),
		poll(`document.getElementById('q-field-replicas') !== null`))
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[
		document.getElementById('question-message').textContent,
		String(document.getElementById('question-message').children.length),
		document.getElementById('q-field-environment').tagName,
		document.getElementById('q-field-replicas').type,
		document.getElementById('q-field-token').type,
		document.querySelector('label[for="q-field-replicas"]').textContent]`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Which environment, and how many replicas? <b>not bold</b>", "0", "SELECT", "number", "password", "Replicas (required)"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the question reads %q, want %q (the server's text as text, a field per property)", got, want)
	}
	t.Logf("screenshot of the question: %s", screenshot(ctx, t, "question.png"))
	do("answering it",
		chromedp.SetValue(chromedp.ID("q-field-environment"), "production"),
		chromedp.SendKeys(chromedp.ID("q-field-replicas"), "3"),
		chromedp.SendKeys(chromedp.ID("q-field-token"), "tok-5e1f"),
		chromedp.Click(chromedp.ID("answer-button")),
		poll(`document.getElementById('question-status').textContent.startsWith('Answered.')`),
		poll(`document.getElementById('run-status').textContent === 'completed'`),
		poll(`document.querySelector('#timeline li.k-input.o-ok') !== null`),
		poll(`(document.querySelector('#timeline li.k-log') || {textContent: ''}).textContent.includes('checking <i>capacity</i>')`),
		poll(`document.querySelector('#timeline li.k-tool.o-ok') !== null`))
	stepText, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#timeline li.k-input').textContent`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stepText, "fields: environment, replicas, token") || strings.Contains(stepText, "tok-5e1f") {
		t.Errorf("the timeline's question step reads %q; want the fields named, never a value", stepText)
	}
	var told map[string]any
	for _, r := range readRecords(t, rec) {
		if r.Kind == mcptest.ElicitAnswered {
			json.Unmarshal(r.Params, &told)
		}
	}
	if fmt.Sprint(told) != "map[action:accept content:map[environment:production replicas:3 token:tok-5e1f]]" {
		t.Errorf("the server was told %v; want the typed answer", told)
	}
	d, err := (&api.Client{BaseURL: "http://" + addr, Token: token}).GetRun(ctx, answered)
	if err != nil || d.Run.Status != "completed" {
		t.Fatalf("the answered run: %+v, %v", d, err)
	}

	cancelled := startRun("starting a run to cancel while it waits")
	do("cancelling it while it waits for input",
		poll(`document.getElementById('run-status').textContent === 'waiting for input'`),
		poll(`!document.getElementById('question').hidden`),
		chromedp.Click(chromedp.ID("cancel-button")),
		poll(`document.getElementById('run-status').textContent === 'cancelled'`),
		poll(`document.getElementById('question').hidden`),
		poll(`document.querySelector('#timeline li.k-input.o-cancelled') !== null`),
		poll(`document.querySelector('#timeline li.k-tool.o-cancelled') !== null`))
	waitForRecord(t, rec, func(r mcptest.Record) bool {
		return r.Kind == mcptest.ElicitAnswered && strings.Contains(string(r.Params), `"action":"cancel"`)
	})
	waitForRecord(t, rec, func(r mcptest.Record) bool { return r.Method == "notifications/cancelled" })
	if d, err := (&api.Client{BaseURL: "http://" + addr, Token: token}).GetRun(ctx, cancelled); err != nil || d.Run.Status != "cancelled" {
		t.Fatalf("the cancelled run: %+v, %v", d, err)
	}
	t.Logf("screenshot: %s", screenshot(ctx, t, "question-cancelled.png"))
	serve.stop()
}
