package catalogue

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/andonhq/andon/mcp"
)

// The leg of a failed connection is the one the mcp client's
// *ConnectError names, however the error was wrapped on its way.
func TestConnectLeg(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("x: %w", &mcp.ConnectError{Leg: mcp.LegDiscover, Err: context.DeadlineExceeded}), mcp.LegDiscover},
		{&mcp.ConnectError{Leg: mcp.LegInitialize, Err: errors.New("refused")}, mcp.LegInitialize},
		{&mcp.ConnectError{Leg: mcp.LegInitialized, Err: errors.New("x")}, mcp.LegInitialized},
		{errors.New("mcp: connecting: dial tcp 127.0.0.1:1: connection refused"), "connecting"},
	} {
		if got := connectLeg(c.err); got != c.want {
			t.Errorf("connectLeg(%v) = %q, want %q", c.err, got, c.want)
		}
	}
	err := fmt.Errorf("catalogue: %w", &legError{leg: "tools/list", err: errors.New("x")})
	if got := legOf(err); got != "tools/list" {
		t.Errorf("legOf = %q, want tools/list", got)
	}
}
