package main

import (
	"context"
	"fmt"

	"github.com/andonhq/andon/mcp/mcptest"
)

const mcptestUsage = `usage: andon mcptest serve [-record FILE] [-versions LIST] [-silent-discover] [-page-size N]

Run the scriptable MCP test server (package mcptest) over stdin and stdout,
as a stdio MCP server. Give it to another command with --stdio, e.g.

	andon call --stdio "andon mcptest serve" echo '{"text":"hi"}'

Tools: echo, slow, stubborn, progress, late, fail, big, ask, crash, garbage,
split, unknown_id, bad_result, stderr ('andon tools' describes them).

Flags:
  -record FILE      append every message received, and what each tool did,
                    to FILE as JSON lines
  -versions LIST    comma-separated protocol revisions to serve (default: all)
  -silent-discover  ignore server/discover instead of refusing it
  -page-size N      split tools/list into pages of N tools
`

// runMCPTest is "andon mcptest serve": the test server as a stdio program,
// so tests and demos have a real subprocess to talk to.
func runMCPTest(ctx context.Context, e *env, args []string) int {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprint(e.stdout, mcptestUsage)
		return exitOK
	}
	if len(args) == 0 || args[0] != "serve" {
		if len(args) == 0 {
			e.errorf("mcptest: missing subcommand serve")
		} else {
			e.errorf("mcptest: unknown subcommand %q", args[0])
		}
		fmt.Fprint(e.stderr, mcptestUsage)
		return exitUsage
	}
	// mcptest.Main parses the flags and returns 0 when stdin ends, 2 for
	// bad flags, 3 when its crash tool ends the connection.
	return mcptest.Main(ctx, args[1:], e.stdin, e.stdout, e.stderr)
}
