package mcp_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/andonhq/andon/mcp"
)

// A 2026-07-28 client's notification over HTTP is accepted (202) and
// dropped, with _meta or without: go-sdk's client (v1.8.0) POSTs
// notifications/cancelled, without _meta and with no session, after it
// closes a cancelled request's stream, and takes a refusal for the end of
// its connection. A notification with neither a session nor a 2026-07-28
// header is still refused.
func TestServerAcceptsAStatelessClientsNotification(t *testing.T) {
	srv := mcp.NewServer(newToolBox(), nil)
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	for _, tc := range []struct {
		name, body, version string
		status              int
	}{
		{"go-sdk's cancel, no _meta", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"context canceled"}}`, "2026-07-28", http.StatusAccepted},
		{"with _meta", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, "2026-07-28", http.StatusAccepted},
		{"no session, no revision", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`, "", http.StatusBadRequest},
		{"no session, a handshake revision", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`, "2025-11-25", http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", hs.URL, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.version != "" {
				req.Header.Set("MCP-Protocol-Version", tc.version)
			}
			resp, err := hs.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
		})
	}
}
