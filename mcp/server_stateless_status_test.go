package mcp_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/andonhq/andon/mcp"
)

// A 2026-07-28 request's error has the HTTP status its revision gives
// its code (the conformance suite's server-stateless checks): 404 for a
// method not found, 400 for a request refused for its _meta (missing,
// a revision not served, no capabilities), and 200 for a tool's refusal.
func TestServerStatelessErrorStatuses(t *testing.T) {
	srv := mcp.NewServer(newToolBox(), nil)
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, tc := range []struct {
		name, method, body string
		status             int
		code               string
	}{
		{"ping is gone", "ping", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{` + meta + `}}`, 404, "-32601"},
		{"initialize is gone", "initialize", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{` + meta + `}}`, 404, "-32601"},
		{"unknown method", "nope/nope", `{"jsonrpc":"2.0","id":1,"method":"nope/nope","params":{` + meta + `}}`, 404, "-32601"},
		{"no _meta", "tools/list", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, 400, "-32602"},
		{"_meta without the revision", "tools/list", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}}`, 400, "-32602"},
		{"no capabilities", "tools/list", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, 400, "-32602"},
		{"unknown tool", "tools/call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope",` + meta + `}}`, 200, "-32602"},
		{"a tool", "tools/list", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`, 200, `"tools"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", hs.URL, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("MCP-Protocol-Version", "2026-07-28")
			req.Header.Set("Mcp-Method", tc.method)
			if tc.method == "tools/call" {
				req.Header.Set("Mcp-Name", "nope")
			}
			resp, err := hs.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.code) {
				t.Errorf("got %d %s, want %d with %s", resp.StatusCode, body, tc.status, tc.code)
			}
		})
	}
}

// A 2026-07-28 request in a revision not served is told the revisions it
// may use instead: those server/discover lists, not the handshake-era
// ones, which a stateless request cannot be made in.
func TestServerStatelessUnsupportedVersionNamesDiscoverable(t *testing.T) {
	srv := mcp.NewServer(newToolBox(), nil)
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest("POST", hs.URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("MCP-Protocol-Version", "2099-01-01")
	req.Header.Set("Mcp-Method", "tools/list")
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if want := `"supported":["2026-07-28"]`; resp.StatusCode != 400 || !strings.Contains(string(got), want) {
		t.Errorf("got %d %s, want 400 with %s", resp.StatusCode, got, want)
	}
}
