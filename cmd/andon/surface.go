package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/andonhq/andon/mcp"
)

// surfaceExitCodes is the exit-code paragraph of the commands that use an
// MCP server's surface beyond tools (resources, prompts, complete): the
// codes of 'andon call', less the tool's own error, which they cannot get.
const surfaceExitCodes = `Stop means stop here as in 'andon call': Ctrl-C (SIGINT) or SIGTERM cancels
the request in flight, the server is told as its transport and revision
require, and andon exits 130; --timeout is the budget of the whole command
(connecting included), after which the request is cancelled the same way
and andon exits 124.

Exit codes: 0 success; 2 usage error; 3 transport or protocol failure, or
an error the server answered with (such as an unknown resource or prompt);
124 --timeout passed (connecting or in the request); 130 cancelled by a
signal.`

// subcommand is one verb of a command with verbs (andon resources list).
type subcommand struct {
	name string
	run  func(ctx context.Context, e *env, args []string) int
}

// runSubcommand runs the verb args[0] of the command name, or reports a
// missing or unknown one (exitUsage). about is printed for help.
func runSubcommand(ctx context.Context, e *env, name, about string, subs []subcommand, args []string) int {
	names := make([]string, len(subs))
	for i, s := range subs {
		names[i] = s.name
	}
	want := strings.Join(names, " or ")
	if len(args) == 0 {
		e.errorf("%s: missing subcommand (want %s)", name, want)
		fmt.Fprintf(e.stderr, "Run 'andon %s -h' for help.\n", name)
		return exitUsage
	}
	if isHelp(args[0]) || args[0] == "help" {
		fmt.Fprintf(e.stdout, "usage: andon %s (%s) [flags] …\n\n%s\n", name, strings.Join(names, "|"), about)
		return exitOK
	}
	for _, s := range subs {
		if s.name == args[0] {
			return s.run(ctx, e, args[1:])
		}
	}
	e.errorf("%s: unknown subcommand %q (want %s)", name, args[0], want)
	return exitUsage
}

// printResultJSON prints v as indented JSON, HTML left unescaped (a server's
// "<" stays "<"). A failure to write is reported as a transport failure, as
// 'andon call --json' does.
func printResultJSON(e *env, what string, v any) int {
	if err := writeJSONTo(e.stdout, v, false); err != nil {
		e.errorf("writing the %s: %v", what, err)
		return exitTransport
	}
	return exitOK
}

// requestProgress returns the call options of a request whose progress is
// shown as 'andon call' shows it (a bar when stderr is a terminal, nothing
// asked of the server otherwise), and where the client's log lines go.
func requestProgress(e *env) (opts *mcp.CallOptions, logOut io.Writer, done func()) {
	f, ok := e.terminal()
	if !ok {
		return &mcp.CallOptions{}, e.stderr, func() {}
	}
	bar := newProgressBar(f)
	return &mcp.CallOptions{OnProgress: bar.update}, bar, bar.clear
}

// stringArgs decodes s, one JSON object whose values are strings (the
// arguments of a prompt, the context of a completion).
func stringArgs(s string) (map[string]string, error) {
	obj, err := jsonObject(s)
	if err != nil {
		return nil, err
	}
	var args map[string]any
	if err := json.Unmarshal(obj, &args); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	out := make(map[string]string, len(args))
	for k, v := range args {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%q must be a string, not %s", k, jsonKind(v))
		}
		out[k] = s
	}
	return out, nil
}
