package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/andonhq/andon/agent"
)

// The console's files are served with their content types and a strict
// Content-Security-Policy, without a token; anything else under /console/
// is not found.
func TestConsoleAssets(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true})
	for _, tt := range []struct{ path, ctype, contains string }{
		{"/", "text/html; charset=utf-8", `<script src="/console/console.js"`},
		{"/console/index.html", "text/html; charset=utf-8", "<main"},
		{"/console/console.js", "text/javascript; charset=utf-8", "/v1/events"},
		{"/console/console.css", "text/css; charset=utf-8", ":focus-visible"},
	} {
		status, header, body := f.raw("GET", tt.path, "")
		if status != http.StatusOK || header.Get("Content-Type") != tt.ctype {
			t.Errorf("GET %s: %d %q, want 200 %q", tt.path, status, header.Get("Content-Type"), tt.ctype)
		}
		if csp := header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'self';") || strings.Contains(csp, "unsafe") {
			t.Errorf("GET %s: Content-Security-Policy %q", tt.path, csp)
		}
		if header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", tt.path)
		}
		if !strings.Contains(string(body), tt.contains) {
			t.Errorf("GET %s: body lacks %q", tt.path, tt.contains)
		}
	}
	for _, path := range []string{"/console/", "/console/nope.js", "/console/..%2fapi.go", "/index.html"} {
		status, header, body := f.raw("GET", path, "")
		checkError(t, status, header, body, http.StatusNotFound, "not_found")
	}
	status, header, body := f.raw("POST", "/", "")
	checkError(t, status, header, body, http.StatusNotFound, "not_found")
}

// Every form control of the console has a label, and nothing in it needs
// what the CSP forbids: no inline script, handler or style.
func TestConsoleHTML(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true})
	_, _, body := f.raw("GET", "/", "")
	page := string(body)
	labels := map[string]bool{}
	for _, m := range regexp.MustCompile(`<label for="([^"]+)"`).FindAllStringSubmatch(page, -1) {
		labels[m[1]] = true
	}
	controls := regexp.MustCompile(`<(input|textarea|select)\b[^>]*>`).FindAllString(page, -1)
	if len(controls) < 4 {
		t.Fatalf("found %d form controls, want the token and start forms' (4)", len(controls))
	}
	idRE := regexp.MustCompile(`\bid="([^"]+)"`)
	for _, c := range controls {
		m := idRE.FindStringSubmatch(c)
		if m == nil || !labels[m[1]] {
			t.Errorf("form control without a label: %s", c)
		}
	}
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`\son[a-z]+=`),              // inline handlers
		regexp.MustCompile(`<script>|<script\s+>`),     // inline script
		regexp.MustCompile(`\sstyle=|<style`),          // inline style
		regexp.MustCompile(`javascript:`),              // script URLs
		regexp.MustCompile(`(src|href)="(https?:)?//`), // other origins
	} {
		if loc := bad.FindString(page); loc != "" {
			t.Errorf("the page has %q, which the CSP forbids or which leaves the origin", loc)
		}
	}
	if !strings.Contains(page, `<html lang="en">`) || !strings.Contains(page, `aria-live="polite"`) {
		t.Error("the page lacks a language or a live region")
	}
	_, _, js := f.raw("GET", "/console/console.js", "")
	for _, bad := range []string{"innerHTML", "outerHTML", "eval(", "document.write", "localStorage", "document.cookie"} {
		if strings.Contains(string(js), bad) {
			t.Errorf("console.js uses %s", bad)
		}
	}
	if !strings.Contains(string(js), "sessionStorage") || !strings.Contains(string(js), "'andon.token'") {
		t.Error("console.js does not keep the token in sessionStorage under andon.token")
	}
}

// A run request may carry its script as a script file's text, JSON or
// YAML: the console sends what the operator picked.
func TestCreateRunScriptText(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true})
	yaml := "steps:\n  - tool_calls:\n      - name: mcp_test_slow\n        arguments: {ms: 5}\n  - text: done\n"
	text, _ := json.Marshal(yaml)
	status, _, body := f.raw("POST", "/v1/runs", `{"prompt":"hi","script":`+string(text)+`}`)
	if status != http.StatusCreated {
		t.Fatalf("create with a YAML script's text: %d %s", status, body)
	}
	var run struct {
		Request struct {
			Script struct {
				Steps []struct {
					ToolCalls []struct {
						Name      string          `json:"name"`
						Arguments json.RawMessage `json:"arguments"`
					} `json:"tool_calls"`
					Text string `json:"text"`
				} `json:"steps"`
			} `json:"script"`
		} `json:"request"`
	}
	if err := json.Unmarshal(body, &run); err != nil {
		t.Fatal(err)
	}
	steps := run.Request.Script.Steps
	var args bytes.Buffer
	if len(steps) == 2 && len(steps[0].ToolCalls) == 1 {
		json.Compact(&args, steps[0].ToolCalls[0].Arguments)
	}
	if len(steps) != 2 || len(steps[0].ToolCalls) != 1 || steps[0].ToolCalls[0].Name != "mcp_test_slow" ||
		args.String() != `{"ms":5}` || steps[1].Text != "done" {
		t.Errorf("stored script %+v", steps)
	}

	for _, bad := range []string{"steps: []", "steps:\n  - {}\n", "not: [a script"} {
		text, _ := json.Marshal(bad)
		status, header, body := f.raw("POST", "/v1/runs", `{"prompt":"hi","script":`+string(text)+`}`)
		msg := checkError(t, status, header, body, http.StatusBadRequest, "bad_request")
		if !strings.Contains(msg, "script") {
			t.Errorf("script %q: message %q does not name the script", bad, msg)
		}
	}
	runs, err := f.client.ListRuns(t.Context(), agent.RunFilter{})
	if err != nil || len(runs) != 1 {
		t.Errorf("runs after one good and three bad requests: %d, %v", len(runs), err)
	}
}
