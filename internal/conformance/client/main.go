// Command client is andon's client for the official MCP conformance suite
// (the npm package @modelcontextprotocol/conformance). scripts/conformance.sh
// builds it and hands it to the suite's runner, which starts a test server
// for each client scenario and runs
//
//	client <server-url>
//
// with MCP_CONFORMANCE_SCENARIO naming the scenario, and, for scenarios that
// need more data, MCP_CONFORMANCE_CONTEXT holding it as a JSON object. The
// program connects with andon's mcp package over HTTP ([mcp.HTTP]) and does
// what the scenario expects of a client: the server records what it sees on
// the wire and the runner scores it. The program's own exit status only
// says whether it could play its part.
//
// It does nothing the mcp package (and its OAuth client, mcp/oauth) does
// not do for any caller: a scenario that checks a feature the packages
// lack (SEP-2243 custom headers, the skills extension, DPoP) is played as
// a plain client would play it, and fails; scripts/conformance-baseline.yml
// lists those failures and why. For the auth/ scenarios it plays the user
// too: it follows the authorization server's redirect itself (see auth.go).
//
// Exit status: 0 the scenario ran, 1 it failed (the error is on stderr),
// 2 usage error (no URL, no or unknown scenario, malformed context).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/andonhq/andon/mcp"
)

// Environment variables the conformance runner sets.
const (
	envScenario = "MCP_CONFORMANCE_SCENARIO"
	envContext  = "MCP_CONFORMANCE_CONTEXT"
	// envProtocol is the spec revision the scenario's server speaks. It is
	// informational: the client negotiates, as andon always does.
	envProtocol = "MCP_CONFORMANCE_PROTOCOL_VERSION"
)

// scenarioTimeout bounds one scenario, below the runner's default 30 s
// timeout, so that a hang ends with an error of ours rather than a kill.
const scenarioTimeout = 25 * time.Second

// discoverTimeout bounds the server/discover probe, above the mcp
// package's default (5 s): the runner plays every scenario of a suite at
// once, and on a loaded machine a 5 s probe can time out and fall back to
// the initialize handshake, which the 2026-07-28 scenarios score as a
// failure. It stays below scenarioTimeout, so that a server that never
// answers the probe still leaves time for the fallback.
const discoverTimeout = 15 * time.Second

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

// programName names the program in messages and, as clientInfo, to servers.
const programName = "andon-conformance-client"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stderr)
	stop()
	os.Exit(code)
}

// run plays the scenario the environment names against the server whose
// URL is the last of args, and returns the exit code. Diagnostics, and the
// mcp package's debug log, go to stderr, which the runner saves.
func run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	if len(args) == 0 || args[len(args)-1] == "" {
		fmt.Fprintf(stderr, "usage: %s <server-url>\n  (with %s set to a scenario name)\n", programName, envScenario)
		return exitUsage
	}
	serverURL := args[len(args)-1]
	name := getenv(envScenario)
	if name == "" {
		fmt.Fprintf(stderr, "%s: %s is not set; known scenarios:\n%s", programName, envScenario, scenarioList())
		return exitUsage
	}
	play, ok := lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "%s: unknown scenario %q; known scenarios:\n%s", programName, name, scenarioList())
		return exitUsage
	}
	sc, err := parseContext(getenv(envContext))
	if err != nil {
		fmt.Fprintf(stderr, "%s: %s: %v\n", programName, envContext, err)
		return exitUsage
	}

	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	logger.Info("running scenario", "scenario", name, "url", serverURL, "spec_version", getenv(envProtocol))
	ctx, cancel := context.WithTimeout(ctx, scenarioTimeout)
	defer cancel()
	e := &env{url: serverURL, scenario: name, context: sc, logger: logger}
	if err := play(ctx, e); err != nil {
		fmt.Fprintf(stderr, "%s: scenario %q failed: %v\n", programName, name, err)
		return exitFailed
	}
	logger.Info("scenario done", "scenario", name)
	return exitOK
}

// parseContext decodes MCP_CONFORMANCE_CONTEXT: empty, or a JSON object.
func parseContext(s string) (map[string]any, error) {
	if strings.TrimSpace(s) == "" {
		return map[string]any{}, nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if m == nil {
		return nil, errors.New("not a JSON object: null")
	}
	return m, nil
}

// env is what a scenario is given.
type env struct {
	url      string
	scenario string
	context  map[string]any
	logger   *slog.Logger
}

// connect opens an andon client to the scenario's server over HTTP, with
// opts (nil for none) completed by the program's name and logger.
func (e *env) connect(ctx context.Context, opts *mcp.ClientOptions) (*mcp.Client, error) {
	return e.connectWith(ctx, nil, opts)
}

// connectWith is connect with the HTTP client hc (nil for the default).
func (e *env) connectWith(ctx context.Context, hc *http.Client, opts *mcp.ClientOptions) (*mcp.Client, error) {
	var o mcp.ClientOptions
	if opts != nil {
		o = *opts
	}
	if o.DiscoverTimeout == 0 {
		o.DiscoverTimeout = discoverTimeout
	}
	o.ClientInfo = mcp.Implementation{Name: programName, Version: "1.0.0"}
	o.Logger = e.logger
	c, err := mcp.Connect(ctx, mcp.HTTP(e.url, hc), &o)
	if err != nil {
		return nil, err
	}
	e.logger.Info("connected", "protocol", c.ProtocolVersion(), "server", c.Server().Implementation.Name)
	return c, nil
}

// findTool lists the server's tools and fails unless name is among them.
func findTool(ctx context.Context, c *mcp.Client, name string) (mcp.Tool, []mcp.Tool, error) {
	tools, err := c.ListTools(ctx, nil)
	if err != nil {
		return mcp.Tool{}, nil, fmt.Errorf("tools/list: %w", err)
	}
	i := slices.IndexFunc(tools, func(t mcp.Tool) bool { return t.Name == name })
	if i < 0 {
		return mcp.Tool{}, tools, fmt.Errorf("the server offers no tool %q", name)
	}
	return tools[i], tools, nil
}

// callTool calls a tool and logs its result. A result with IsError set is
// logged, not an error: the scenario's server judges it.
func (e *env) callTool(ctx context.Context, c *mcp.Client, name string, args any) (*mcp.CallToolResult, error) {
	res, err := c.CallTool(ctx, name, args, nil)
	if err != nil {
		return nil, fmt.Errorf("tools/call %s: %w", name, err)
	}
	e.logger.Info("tool result", "tool", name, "is_error", res.IsError, "text", res.Text())
	return res, nil
}
