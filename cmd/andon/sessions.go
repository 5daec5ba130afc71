package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"
)

func runSessions(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "sessions", "andon sessions [--cancel SESSION]",
		"List the MCP sessions with calls in flight through the gateway (andon gateway\n"+
			"--stdio, /mcp on serve): each session, its client, and its calls' runs. With\n"+
			"--cancel, cancel every call of one session: each upstream server is told, and\n"+
			"the client answered that an operator stopped its call.")
	af := addAPIFlags(fs)
	cancel := fs.String("cancel", "", "cancel every call in flight of `SESSION`")
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return fs.usageError("unexpected argument %q", pos[0])
	}
	c, code, ok := af.client(ctx, e)
	if !ok {
		return code
	}
	if *cancel != "" {
		ids, err := c.CancelGatewaySession(ctx, *cancel)
		if err != nil {
			return apiError(e, err)
		}
		if af.json {
			return printJSON(e, map[string]any{"session": *cancel, "cancelled": ids})
		}
		for _, id := range ids {
			fmt.Fprintf(e.stdout, "cancelled %s\n", id)
		}
		return exitOK
	}
	sessions, err := c.ListGatewaySessions(ctx)
	if err != nil {
		return apiError(e, err)
	}
	if af.json {
		return printJSON(e, sessions)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tCLIENT\tOWNER\tRUN\tTOOL\tSTATUS\tSINCE")
	for _, s := range sessions {
		for _, call := range s.Calls {
			tool := ""
			if call.Gateway != nil {
				tool = call.Gateway.Tool
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", printable(s.Session), printable(s.Client), printable(s.Owner),
				call.ID, printable(tool), call.Status, call.CreatedAt.Local().Format(time.DateTime))
		}
	}
	tw.Flush()
	return exitOK
}
