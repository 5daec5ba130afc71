package main

import (
	"context"
	"fmt"

	"github.com/andonhq/andon/mcp"
)

const completeAbout = `Ask an MCP server to complete the value of an argument (completion/complete):
of the prompt --prompt NAME, or of the resource template --resource
TEMPLATE. VALUE is what has been typed so far (default: empty). --context
gives arguments already chosen, as one JSON object of string values.

Prints the suggested values, one per line; with --json the whole completion
(values, total, hasMore). The server is reached as 'andon call' reaches it
(--stdio or --url, --header, --protocol).

` + surfaceExitCodes

// runComplete is "andon complete": one completion/complete request.
func runComplete(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "complete", "andon complete (--stdio COMMAND | --url URL) (--prompt NAME | --resource TEMPLATE) [flags] ARGUMENT [VALUE]", completeAbout)
	sf := addServerFlags(fs)
	prompt := fs.String("prompt", "", "complete an argument of the prompt `NAME`")
	resource := fs.String("resource", "", "complete a variable of the resource template `TEMPLATE`")
	contextJSON := fs.String("context", "", "arguments already chosen, as a JSON `object` of strings")
	asJSON := fs.Bool("json", false, "print the whole completion as JSON")
	pos, code, ok := sf.parse(fs, args)
	if !ok {
		return code
	}
	var ref mcp.CompletionRef
	switch {
	case *prompt == "" && *resource == "":
		return fs.usageError("one of --prompt or --resource is required")
	case *prompt != "" && *resource != "":
		return fs.usageError("give --prompt or --resource, not both")
	case *prompt != "":
		ref = mcp.PromptRef(*prompt)
	default:
		ref = mcp.ResourceRef(*resource)
	}
	if len(pos) == 0 {
		return fs.usageError("missing ARGUMENT name")
	}
	if len(pos) > 2 {
		return fs.usageError("too many arguments: want ARGUMENT and at most one VALUE, got %d", len(pos))
	}
	req := mcp.CompleteRequest{Ref: ref, Argument: pos[0]}
	if len(pos) == 2 {
		req.Value = pos[1]
	}
	if *contextJSON != "" {
		c, err := stringArgs(*contextJSON)
		if err != nil {
			return fs.usageError("--context: %v", err)
		}
		req.Context = c
	}

	ctx, sess, code, ok := sf.open(ctx, e, e.stderr)
	if !ok {
		return code
	}
	defer sess.close()

	res, err := sess.client.Complete(ctx, req, nil)
	if err != nil {
		return sess.fail(ctx, e, "complete "+req.Argument, err)
	}
	if *asJSON {
		return printResultJSON(e, "completion", res)
	}
	for _, v := range res.Values {
		fmt.Fprintln(e.stdout, printable(v))
	}
	return exitOK
}
