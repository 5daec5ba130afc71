// Command andon is the command-line interface of andon, a Go agent runtime
// and MCP client in which stop means stop: any tool call can be abandoned —
// by its caller, by a deadline, or by an operator — and the server is told,
// within a bounded time, without retrying a half-sent write.
//
// andon serve runs the agent runtime and its JSON API on 127.0.0.1:7700
// (--addr picks another); run, runs, show, cancel, approve, deny, answer and decline talk
// to it, at --api, else ANDON_API, else that default. andon worker runs
// more of the runtime, without the API, on the same database (with --db
// postgres://…, on other machines too). It also talks to MCP servers
// directly, over stdio and over HTTP:
//
//	andon tools --stdio "COMMAND ARGS…"              list a server's tools
//	andon call  --stdio "COMMAND ARGS…" TOOL [ARGS]  call one tool
//	andon call  --url URL [--header 'K: V'] TOOL [ARGS]
//	andon resources list|read, andon prompts list|get, andon complete
//	                                                 the rest of a server's surface
//	andon mcptest serve [-http ADDR]                 run the test server
//
// Ctrl-C during a call cancels it on the wire (notifications/cancelled, or
// the response stream closed on 2026-07-28 HTTP) and andon exits 130. Exit codes: 0 success, 1 the tool reported an error,
// 2 usage error, 3 transport or protocol failure, 124 timeout, 130
// cancelled by a signal. Each command's -h says more.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// The first SIGINT or SIGTERM cancels the context, and with it the call
	// in flight. After that the handlers are released, so a second Ctrl-C
	// kills andon at once if a stubborn server holds up the shutdown.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// command is one subcommand of andon. Each lives in its own file; add a new
// one to commands.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, e *env, args []string) int
}

// commands returns andon's subcommands, in the order usage lists them.
func commands() []command {
	return []command{
		{"serve", "run the agent runtime and its API (the main job)", runServe},
		{"worker", "execute runs from a shared database, without the API", runWorker},
		{"gateway", "serve andon.yaml's tools to an MCP client on stdio, every call a run", runGateway},
		{"run", "start a run (--script FILE), optionally following it (--wait)", runRun},
		{"runs", "list runs", runRuns},
		{"show", "show a run: steps, write fence, audit rows", runShow},
		{"cancel", "cancel a run; its call in flight stops on the wire", runCancel},
		{"sessions", "list the gateway's MCP sessions and their calls; cancel one (--cancel)", runSessions},
		{"approve", "approve the tool call a run waits on", runApprove},
		{"deny", "deny the tool call a run waits on", runDeny},
		{"answer", "answer the question a server asked during a run", runAnswer},
		{"decline", "decline the question a server asked during a run", runDecline},
		{"call", "call one tool on an MCP server and print the result", runCall},
		{"tools", "list the tools an MCP server offers", runTools},
		{"tasks", "get, list, follow or cancel an MCP server's tasks (list|get|follow|cancel)", runTasks},
		{"resources", "list or read an MCP server's resources", runResources},
		{"prompts", "list or get an MCP server's prompts", runPrompts},
		{"complete", "complete a prompt's or resource template's argument", runComplete},
		{"mcptest", "run the scriptable MCP test server (mcptest serve)", runMCPTest},
		{"migrate", "create or update the database schema", runMigrate},
		{"secret", "manage the secrets egress injects (set, list, rm, rotate-key)", runSecret},
		{"auth", "connect to MCP servers behind OAuth (login, status, logout)", runAuth},
		{"audit", "list and verify the hash-chained audit log", runAudit},
		{"token", "manage the API's tokens (create, list, revoke)", runToken},
	}
}

// run runs andon with args (without the program name) and returns the exit
// status. ctx is cancelled when andon is told to stop (SIGINT, SIGTERM).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e, flush := newEnv(stdin, stdout, stderr)
	defer flush()
	if len(args) == 0 {
		e.errorf("missing command")
		usage(e.stderr)
		return exitUsage
	}
	name := args[0]
	if isHelp(name) || name == "help" {
		usage(e.stdout)
		return exitOK
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, e, args[1:])
		}
	}
	e.errorf("unknown command %q", name)
	fmt.Fprintln(e.stderr, "Run 'andon help' for the list of commands.")
	return exitUsage
}

func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help"
}

func usage(w io.Writer) {
	fmt.Fprint(w, `andon is an agent runtime and MCP client in which stop means stop.

usage: andon COMMAND [flags] [arguments]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, `
Run 'andon COMMAND -h' for a command's flags.

Exit codes: 0 success; 1 the tool reported an error; 2 usage error;
3 transport or protocol failure; 124 timeout; 130 cancelled by a signal.
`)
}
