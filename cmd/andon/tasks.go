package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/andonhq/andon/mcp"
)

const tasksAbout = `Work with the tasks of an MCP server, such as one another process started
and persisted (a task is a durable handle: server, task id and protocol
revision; pin the revision the task was created under with --protocol).

  andon tasks list   (--stdio COMMAND | --url URL) [--json]     tasks/list (2025-11-25 only)
  andon tasks get    (--stdio COMMAND | --url URL) [--json] ID  tasks/get
  andon tasks follow (--stdio COMMAND | --url URL) [--json] ID  follow the task to its end, print its result
  andon tasks cancel (--stdio COMMAND | --url URL) ID           tasks/cancel

list and get print one task a line (id, status, status message), or with
--json the tasks as JSON objects. follow prints the result as 'andon call'
does and shows status changes on stderr; Ctrl-C or --timeout cancel the task
with tasks/cancel. A --stdio server is a new process: it knows only the tasks
it keeps beyond its own life.

Exit codes: 0 success; 1 the task's tool reported an error, or the task failed
or was cancelled (follow); 2 usage error; 3 transport or protocol failure, or
an unknown task id; 124 --timeout passed; 130 cancelled by a signal.`

// runTasks is "andon tasks": tasks/list, tasks/get, following and
// tasks/cancel, for tasks started elsewhere.
func runTasks(ctx context.Context, e *env, args []string) int {
	sub := ""
	if len(args) > 0 {
		sub, args = args[0], args[1:]
	}
	fs := newFlagSet(e, "tasks", "andon tasks (list|get|follow|cancel) (--stdio COMMAND | --url URL) [flags] [ID]", tasksAbout)
	if isHelp(sub) {
		fs.help(e.stdout)
		return exitOK
	}
	sf := addServerFlags(fs)
	asJSON := fs.Bool("json", false, "print tasks (list, get) or the result (follow) as JSON")
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	wantID := sub != "list"
	switch {
	case sub == "":
		return fs.usageError("missing subcommand: list, get, follow or cancel")
	case sub != "list" && sub != "get" && sub != "follow" && sub != "cancel":
		return fs.usageError("unknown subcommand %q (want list, get, follow or cancel)", sub)
	case wantID && len(pos) != 1:
		return fs.usageError("%s takes one task ID", sub)
	case !wantID && len(pos) != 0:
		return fs.usageError("list takes no arguments")
	}
	if code, ok := sf.check(fs); !ok {
		return code
	}
	ctx, sess, code, ok := sf.open(ctx, e, e.stderr)
	if !ok {
		return code
	}
	defer sess.close()
	c := sess.client
	if !c.TasksSupported() {
		// The server may still know the id; say why it may not.
		sess.logger.Warn("andon: the server did not declare tasks", "protocol", c.ProtocolVersion())
	}
	switch sub {
	case "list":
		tasks, err := collect(c.ListTasks(ctx, nil))
		if err != nil {
			return sess.fail(ctx, e, "tasks list", err)
		}
		return printTasks(e, tasks, *asJSON)
	case "get":
		t, err := c.GetTask(ctx, pos[0], nil)
		if err != nil {
			return sess.fail(ctx, e, "tasks get", err)
		}
		return printTasks(e, []mcp.Task{*t}, *asJSON)
	case "cancel":
		t, err := c.CancelTask(ctx, pos[0], nil)
		switch {
		case errors.Is(err, mcp.ErrTaskTerminal):
			fmt.Fprintf(e.stderr, "andon: task %s had already ended (%s): nothing to cancel\n", printable(pos[0]), printable(string(t.Status)))
			return exitOK
		case err != nil:
			return sess.fail(ctx, e, "tasks cancel", err)
		}
		if t.Status == "" {
			fmt.Fprintf(e.stdout, "%s\tcancel acknowledged\n", printable(t.ID))
		} else {
			fmt.Fprintf(e.stdout, "%s\t%s\n", printable(t.ID), printable(string(t.Status)))
		}
		return exitOK
	}
	opts := &mcp.CallOptions{}
	showTaskStatus(opts, e.stderr)
	res, err := c.FollowTask(ctx, pos[0], opts)
	var te *mcp.TaskError
	switch {
	case errors.As(err, &te):
		e.errorf("tasks follow: %v", err)
		return exitToolError
	case err != nil:
		return sess.fail(ctx, e, "tasks follow", err)
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
		e.errorf("task %s: the tool reported an error", printable(pos[0]))
		return exitToolError
	}
	return exitOK
}

// showTaskStatus makes a call show its task's status on w as it changes,
// and returns where the task's id will be, once there is one.
func showTaskStatus(opts *mcp.CallOptions, w io.Writer) *string {
	id := new(string)
	show := func(t mcp.Task) {
		line := fmt.Sprintf("andon: task %s %s", printable(t.ID), printable(string(t.Status)))
		if t.StatusMessage != "" {
			line += ": " + printable(t.StatusMessage)
		}
		fmt.Fprintln(w, line)
	}
	opts.OnTaskCreated = func(t mcp.Task) error {
		*id = t.ID
		show(t)
		return nil
	}
	opts.OnTaskStatus = func(t mcp.Task) {
		*id = t.ID
		show(t)
	}
	return id
}

func printTasks(e *env, tasks []mcp.Task, asJSON bool) int {
	if asJSON {
		if tasks == nil {
			tasks = []mcp.Task{}
		}
		if err := writeJSON(e.stdout, tasks); err != nil {
			e.errorf("writing the tasks: %v", err)
			return exitTransport
		}
		return exitOK
	}
	for _, t := range tasks {
		fmt.Fprintf(e.stdout, "%s\t%s\t%s\n", printable(t.ID), printable(string(t.Status)), printable(t.StatusMessage))
	}
	return exitOK
}

func writeJSON(w io.Writer, v any) error { return writeJSONTo(w, v, false) }
