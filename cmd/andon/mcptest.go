package main

import (
	"context"
	"fmt"

	"github.com/andonhq/andon/mcp/mcptest"
)

const mcptestUsage = `usage: andon mcptest serve [-record FILE] [-versions LIST] [-silent-discover] [-page-size N]
                          [-http ADDR [-generations LIST] [-json-response]] [-tasks]

Run the scriptable MCP test server (package mcptest) over stdin and stdout,
as a stdio MCP server, or over HTTP with -http. Give it to another command
with --stdio or --url, e.g.

	andon call --stdio "andon mcptest serve" echo '{"text":"hi"}'

	andon mcptest serve -http 127.0.0.1:8931 &
	andon call --url http://127.0.0.1:8931/mcp echo '{"text":"hi"}'

Tools: echo, slow, stubborn, progress, late, fail, big, ask, crash, garbage,
split, unknown_id, bad_result, stderr ('andon tools' describes them). With
-tasks also the task tools task_wait, task_echo, task_fail, task_ask,
task_stubborn, task_reject_cancel and task_forget, and tasks declared
(2025-11-25 capabilities.tasks, the 2026-07-28 tasks extension).

Flags:
  -record FILE      append every message received, and what each tool did,
                    to FILE as JSON lines
  -versions LIST    comma-separated protocol revisions to serve (default: all)
  -silent-discover  ignore server/discover instead of refusing it
  -page-size N      split tools/list into pages of N tools
  -http ADDR        serve HTTP on ADDR (a loopback address such as
                    127.0.0.1:0) instead of stdio; the endpoint URL is printed
                    on stdout as the first line
  -generations LIST comma-separated HTTP generations to serve: stateless
                    (2026-07-28), sessions (2025-03-26 to 2025-11-25), sse
                    (HTTP+SSE, 2024-11-05); default: stateless,sessions, so
                    a client pinned to 2024-11-05 (--protocol 2024-11-05) is
                    refused its GET with 405 unless sse is in the list
  -json-response    answer HTTP requests with JSON, not event streams
  -invalid-tool     also offer bad_header, a tool with an invalid x-mcp-header
  -elicit           also offer elicit, a tool that asks the user a question
  -stall LIST       comma-separated methods to record and never answer
                    (initialize; over HTTP also notifications/initialized,
                    DELETE)
  -fault FAULT      misbehave on every HTTP POST: silent,
                    headers-then-silence, keep-alive, trickle
  -tasks            offer the task tools and declare tasks
`

// runMCPTest is "andon mcptest serve": the test server as a stdio program
// or an HTTP server, so tests and demos have a real process to talk to.
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
	// -h is answered here, in the help style of every andon command;
	// mcptest.Main would print the flag package's bare defaults.
	for _, arg := range args[1:] {
		if arg == "--" {
			break
		}
		if isHelp(arg) {
			fmt.Fprint(e.stdout, mcptestUsage)
			return exitOK
		}
	}
	// mcptest.Main parses the flags and returns 0 when stdin ends (over
	// HTTP: when ctx ends), 2 for bad flags, 3 when its crash tool ends the
	// connection.
	// Its stdout is JSON-RPC (or, over HTTP, the endpoint's URL): a
	// protocol, passed on as it is.
	code := mcptest.Main(ctx, args[1:], e.stdin, e.rawStdout, e.stderr)
	if code == exitUsage {
		fmt.Fprintln(e.stderr, "Run 'andon mcptest serve -h' for help.")
	}
	return code
}
