package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/andonhq/andon/mcp"
)

const promptsAbout = `List the prompts an MCP server offers, and render one.

  andon prompts list [--json]        one per line: the name, a tab, the
                                     description, a tab, the arguments
                                     (a required one marked with *)
  andon prompts get [--json] NAME [ARGS]
                                     the rendered messages, each as
                                     "ROLE: TEXT"; ARGS is one JSON object
                                     of string values, e.g. '{"name":"Ada"}'

Pagination is followed. The server is reached as 'andon call' reaches it
(--stdio or --url, --header, --protocol).

` + surfaceExitCodes

// runPrompts is "andon prompts": list or get a server's prompts.
func runPrompts(ctx context.Context, e *env, args []string) int {
	return runSubcommand(ctx, e, "prompts", promptsAbout, []subcommand{
		{"list", runPromptsList},
		{"get", runPromptsGet},
	}, args)
}

func runPromptsList(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "prompts list", "andon prompts list (--stdio COMMAND | --url URL) [flags]", promptsAbout)
	sf := addServerFlags(fs)
	asJSON := fs.Bool("json", false, "print the prompts as a JSON array")
	if code, ok := sf.parseNoArgs(fs, args); !ok {
		return code
	}
	ctx, sess, code, ok := sf.open(ctx, e, e.stderr)
	if !ok {
		return code
	}
	defer sess.close()

	list, err := collect(sess.client.ListPrompts(ctx, nil))
	if err != nil {
		return sess.fail(ctx, e, "listing prompts", err)
	}
	if *asJSON {
		return printResultJSON(e, "prompts", list)
	}
	for _, p := range list {
		args := make([]string, len(p.Arguments))
		for i, a := range p.Arguments {
			args[i] = printable(a.Name)
			if a.Required {
				args[i] += "*"
			}
		}
		fmt.Fprintf(e.stdout, "%s\t%s\t%s\n", printable(p.Name), printable(p.Description), strings.Join(args, " "))
	}
	return exitOK
}

func runPromptsGet(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "prompts get", "andon prompts get (--stdio COMMAND | --url URL) [flags] NAME [ARGS]", promptsAbout)
	sf := addServerFlags(fs)
	asJSON := fs.Bool("json", false, "print the whole result (a GetPromptResult) as JSON")
	pos, code, ok := sf.parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		return fs.usageError("missing prompt NAME")
	}
	if len(pos) > 2 {
		return fs.usageError("too many arguments: want NAME and at most one JSON object, got %d", len(pos))
	}
	name := pos[0]
	var promptArgs map[string]string
	if len(pos) == 2 {
		a, err := stringArgs(pos[1])
		if err != nil {
			return fs.usageError("ARGS: %v", err)
		}
		promptArgs = a
	}

	opts, logOut, done := requestProgress(e)
	ctx, sess, code, ok := sf.open(ctx, e, logOut)
	if !ok {
		return code
	}
	defer sess.close()

	res, err := sess.client.GetPrompt(ctx, name, promptArgs, opts)
	done()
	if err != nil {
		return sess.fail(ctx, e, "get prompt "+name, err)
	}
	if *asJSON {
		return printResultJSON(e, "prompt", res)
	}
	for _, m := range res.Messages {
		var text strings.Builder
		writeResultText(&text, []mcp.Content{m.Content}, nil)
		fmt.Fprintf(e.stdout, "%s: %s", printable(m.Role), text.String())
	}
	return exitOK
}
