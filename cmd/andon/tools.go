package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/andonhq/andon/mcp"
)

const toolsAbout = `List the tools an MCP server offers: one per line, the name, a tab, and the
description (with "[task: required]" or "[task: optional]" after it for a tool
that runs as an MCP task); with --json, the tools as a JSON array of the MCP Tool objects
as the server sent them, every field kept (input schema, annotations,
execution, icons, _meta …). Pagination is followed.

Exit codes are those of 'andon call': 0 success, 2 usage error, 3 transport
or protocol failure, 124 --timeout passed, 130 cancelled by a signal.`

// runTools is "andon tools": list a server's tools.
func runTools(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "tools", "andon tools (--stdio COMMAND | --url URL) [flags]", toolsAbout)
	sf := addServerFlags(fs)
	asJSON := fs.Bool("json", false, "print the tools as a JSON array")
	pos, code, ok := sf.parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return fs.usageError("unexpected argument %q", pos[0])
	}

	ctx, sess, code, ok := sf.open(ctx, e, e.stderr)
	if !ok {
		return code
	}
	defer sess.close()

	tools, err := sess.client.ListTools(ctx, nil)
	if err != nil {
		return sess.fail(ctx, e, "listing tools", err)
	}
	if *asJSON {
		// The objects as the server sent them: a field mcp.Tool does not
		// model (execution.taskSupport says a tool can only run as a task)
		// is what a user looking at --json needs to see.
		raw := make([]json.RawMessage, 0, len(tools)) // "[]", not "null"
		for _, t := range tools {
			raw = append(raw, t.Raw) // set by decoding: every listed tool has it
		}
		return printResultJSON(e, "tools", raw)
	}
	for _, t := range tools {
		// The server's words go to a terminal: keep them to one safe line.
		// A tool that runs as a task says so: 'andon call' follows it.
		task := ""
		if t.TaskSupport != mcp.TaskForbidden {
			task = " [task: " + string(t.TaskSupport) + "]"
		}
		fmt.Fprintf(e.stdout, "%s\t%s%s\n", printable(t.Name), printable(t.Description), task)
	}
	return exitOK
}
