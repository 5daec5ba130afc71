package catalogue

import (
	"errors"
	"fmt"
	"testing"
)

// The leg of a failed connection is read from the mcp client's error, in
// the forms it writes: "(method)" for an interrupted request, "method: "
// for a wrapped failure.
func TestConnectLeg(t *testing.T) {
	for _, c := range []struct{ msg, want string }{
		{"mcp: connecting: mcp: call timed out (server/discover): budget", "server/discover"},
		{"mcp: connecting: initialize: mcp: call timed out (initialize): budget", "initialize"},
		{"mcp: connecting: notifications/initialized: mcp: call timed out", "notifications/initialized"},
		{"mcp: connecting: … timed out (notifications/initialized)", "notifications/initialized"},
		{"mcp: connecting: dial tcp 127.0.0.1:1: connection refused", "connecting"},
	} {
		if got := connectLeg(errors.New(c.msg)); got != c.want {
			t.Errorf("connectLeg(%q) = %q, want %q", c.msg, got, c.want)
		}
	}
	err := fmt.Errorf("catalogue: %w", &legError{leg: "tools/list", err: errors.New("x")})
	if got := legOf(err); got != "tools/list" {
		t.Errorf("legOf = %q, want tools/list", got)
	}
}
