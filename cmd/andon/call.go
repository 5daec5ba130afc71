package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/andonhq/andon/mcp"
)

const callAbout = `Call the tool TOOL on an MCP server and print its result: the text content
by default, the whole CallToolResult as JSON with --json. ARGS is the tool's
arguments as one JSON object, e.g. '{"text":"hi"}'; without it none are sent.

The server is reached over stdio (--stdio runs it) or over HTTP (--url names
its endpoint; the HTTP generation is negotiated, and --header adds static
headers such as Authorization to every request). --protocol pins the
revision, and over HTTP with it the generation: 2024-11-05 speaks HTTP+SSE,
2025-03-26 to 2025-11-25 Streamable HTTP with sessions, 2026-07-28
stateless Streamable HTTP; a server that lacks it refuses the connection.

Stop means stop: Ctrl-C (SIGINT) or SIGTERM cancels the call, the server is
told as its transport and revision require (notifications/cancelled, or on
2026-07-28 HTTP the response stream closed), and andon exits 130. --timeout
is the budget of the whole command: starting or reaching the server, every
leg of the handshake and the call. A server that does not answer in time is
given up on in whichever leg it stalled (the message names it), a call in
flight is cancelled the same way as on Ctrl-C, and andon exits 124. When
stderr is a terminal, progress the server reports is shown as a bar.

A tool that runs as a task (execution.taskSupport "required", or a 2026-07-28
server that makes the call one) is followed to its end: its status is shown
on stderr as it changes, and Ctrl-C or --timeout cancel the task with
tasks/cancel (never notifications/cancelled), exiting 130 or 124. 'andon
tasks' gets, lists, follows and cancels tasks started elsewhere.

Exit codes: 0 success; 1 the tool reported an error (isError), or its task
failed or was cancelled by someone else; 2 usage error;
3 transport or protocol failure; 124 --timeout passed (connecting or calling);
130 cancelled by a signal.`

// runCall is "andon call": one tool call, with cancellation on a signal.
func runCall(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "call", "andon call (--stdio COMMAND | --url URL) [flags] TOOL [ARGS]", callAbout)
	sf := addServerFlags(fs)
	asJSON := fs.Bool("json", false, "print the whole result (a CallToolResult) as JSON")
	pos, code, ok := sf.parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		return fs.usageError("missing TOOL name")
	}
	if len(pos) > 2 {
		return fs.usageError("too many arguments: want TOOL and at most one JSON object, got %d", len(pos))
	}
	tool := pos[0]
	// An untyped nil, not a nil json.RawMessage: that would be sent as null.
	var toolArgs any
	if len(pos) == 2 {
		obj, err := jsonObject(pos[1])
		if err != nil {
			return fs.usageError("ARGS: %v", err)
		}
		toolArgs = obj
	}

	logOut := e.stderr
	var bar *progressBar
	if f, ok := e.terminal(); ok {
		bar = newProgressBar(f)
		logOut = bar // log lines go above the bar, not through it
	}
	ctx, sess, code, ok := sf.open(ctx, e, logOut)
	if !ok {
		return code
	}
	// On an interrupted call, Close runs after the server has been told to
	// stop; it is bounded, so exiting through it keeps "stop" prompt.
	defer sess.close()

	opts := &mcp.CallOptions{}
	if bar != nil {
		opts.OnProgress = bar.update
	}
	task := showTaskStatus(opts, logOut)
	res, err := sess.client.CallTool(ctx, tool, toolArgs, opts)
	if bar != nil {
		bar.clear()
	}
	if err != nil {
		if *task != "" && (errors.Is(err, mcp.ErrCancelled) || errors.Is(err, mcp.ErrTimeout)) && !errors.As(err, new(*mcp.TaskError)) {
			// The call's error already sent tasks/cancel on its way;
			// closing the session lets it go out.
			fmt.Fprintf(logOut, "andon: task %s: cancelling (tasks/cancel)\n", printable(*task))
		}
		if errors.As(err, new(*mcp.TaskError)) {
			// The task ended failed, or cancelled by someone else.
			e.errorf("call %s: %v", tool, err)
			return exitToolError
		}
		return sess.fail(ctx, e, "call "+tool, err)
	}

	if *asJSON {
		if err := writeJSON(e.stdout, res); err != nil {
			e.errorf("writing the result: %v", err)
			return exitTransport
		}
	} else {
		writeResultText(e.stdout, res.Content, res.StructuredContent)
	}
	if res.IsError {
		e.errorf("tool %s reported an error", tool)
		return exitToolError
	}
	return exitOK
}

// jsonObject checks that s is one JSON object and returns it compacted. The
// original bytes are sent, not a re-encoding, so large numbers keep their
// precision.
func jsonObject(s string) (json.RawMessage, error) {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("must be a JSON object, not %s", jsonKind(v))
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	return buf.Bytes(), nil
}

// jsonKind names the JSON type of a decoded value, for error messages.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

// writeResultText prints a result for a person: each text block as it is,
// and a one-line note for each block of another kind (--json shows them
// whole). A result with no content but structured content prints that.
func writeResultText(w io.Writer, content []mcp.Content, structured json.RawMessage) {
	var b strings.Builder
	for _, c := range content {
		switch c.Type {
		case "text":
			b.WriteString(c.Text)
		case "image", "audio":
			fmt.Fprintf(&b, "[%s %s, %d bytes base64; see --json]", c.Type, printable(c.MIMEType), len(c.Data))
		case "resource_link":
			fmt.Fprintf(&b, "[resource_link %s]", printable(c.URI))
		default:
			fmt.Fprintf(&b, "[%s content; see --json]", printable(c.Type))
		}
		if !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
	}
	if len(content) == 0 && len(structured) > 0 {
		b.Write(structured)
		b.WriteByte('\n')
	}
	io.WriteString(w, b.String())
}
