package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// A server that never answers the handshake costs the user --timeout, in
// whichever leg it stalls, and andon exits 124 naming that leg: --timeout is
// the budget of the whole command, connecting included.
func TestTimeoutBoundsTheHandshake(t *testing.T) {
	t.Parallel()
	stalled := func(t *testing.T, opts mcptest.Options) string {
		s := mcptest.NewServer(&opts)
		hs := httptest.NewServer(s.HTTPHandler(nil))
		t.Cleanup(s.Close)
		t.Cleanup(func() {
			hs.CloseClientConnections()
			hs.Close()
		})
		return hs.URL
	}
	legacy := []string{mcp.Version20251125}
	cases := []struct {
		name   string
		target func(t *testing.T) []string
		leg    string
	}{
		{"stdio/never-writes", func(t *testing.T) []string { return []string{"--stdio", "sleep 3600"} }, mcp.LegDiscover},
		{"stdio/initialize-stalled", func(t *testing.T) []string {
			return []string{"--stdio", server("", "-versions", mcp.Version20251125, "-stall", "initialize")}
		}, mcp.LegInitialize},
		{"http/accepts-never-answers", func(t *testing.T) []string { return []string{"--url", silentListener(t)} }, mcp.LegDiscover},
		{"http/initialize-stalled", func(t *testing.T) []string {
			return []string{"--url", stalled(t, mcptest.Options{Versions: legacy, Stall: []string{"initialize"}})}
		}, mcp.LegInitialize},
		{"http/initialized-post-stalled", func(t *testing.T) []string {
			return []string{"--url", stalled(t, mcptest.Options{Versions: legacy, Stall: []string{"notifications/initialized"}})}
		}, mcp.LegInitialized},
	}
	for _, c := range cases {
		for _, cmd := range [][]string{{"call"}, {"tools"}} {
			t.Run(c.name+"/"+cmd[0], func(t *testing.T) {
				t.Parallel()
				// Room for a loaded machine to start a subprocess server
				// and reach the leg that stalls.
				args := append(append(cmd, c.target(t)...), "--timeout", "3s")
				if cmd[0] == "call" {
					args = append(args, "echo", `{"text":"hi"}`)
				}
				start := time.Now()
				r := runAndon(t, args...)
				t.Logf("%s ended after %v with --timeout 3s", strings.Join(cmd, " "), time.Since(start))
				r.check(t, exitTimeout)
				want := "timed out during " + c.leg
				if !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "--timeout 3s passed") {
					t.Errorf("stderr %q, want it to say %q and that --timeout passed", r.stderr, want)
				}
			})
		}
	}
}

// Ctrl-C during the handshake stops it at once: exit 130, naming the leg.
func TestSignalDuringTheHandshake(t *testing.T) {
	t.Parallel()
	rec := recordFile(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*patience)
	defer cancel()
	cmd := exec.CommandContext(ctx, andonBin, "call", "--stdio", server(rec, "-versions", mcp.Version20251125, "-stall", "initialize"), "--timeout", "1h", "echo")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitForRecord(t, rec, func(r mcptest.Record) bool { return r.Kind == mcptest.Received && r.Method == "initialize" })
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	r := result{code: exitCode(t, cmd.Wait()), stdout: stdout.String(), stderr: stderr.String()}
	r.check(t, exitSignal)
	if !strings.Contains(r.stderr, "cancelled during initialize") {
		t.Errorf("stderr %q, want it to name the leg", r.stderr)
	}
	if find(readRecords(t, rec), func(r mcptest.Record) bool { return r.Method == "notifications/cancelled" }) != nil {
		t.Error("the server was sent notifications/cancelled for the handshake")
	}
}

// silentListener starts an mcptest.SilentListener for the test and
// returns its URL.
func silentListener(t *testing.T) string {
	t.Helper()
	l, err := mcptest.NewSilentListener()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l.URL()
}
