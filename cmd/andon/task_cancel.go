package main

import (
	"fmt"

	"github.com/andonhq/andon/api"
)

// printTaskCancels says on stderr what a cancel did about the run's MCP
// tasks: sent by the worker holding the call, or by the API's process with
// the server's answer.
func printTaskCancels(e *env, tasks []api.TaskCancel) {
	for _, t := range tasks {
		what := "tasks/cancel " + printable(t.Outcome)
		if t.ByHolder && t.Outcome == "" {
			what = "tasks/cancel sent by the worker holding the call"
		}
		fmt.Fprintf(e.stderr, "andon: task %s of %s on server %s (step %d, call %d): %s\n", printable(t.TaskID), printable(t.Tool), printable(t.Server), t.Step, t.Call, what)
	}
}

// printRunTasks lists, for andon show, the run's calls that became MCP
// tasks: where each runs, its state, and what its server said to
// tasks/cancel.
func printRunTasks(e *env, tasks []api.Task) {
	if len(tasks) == 0 {
		return
	}
	fmt.Fprintln(e.stdout, "  tasks:")
	for _, t := range tasks {
		line := fmt.Sprintf("    step %d call %d %s: task %s on server %s (%s), %s", t.Step, t.Call, printable(t.Tool), printable(t.TaskID), printable(t.Server), printable(t.Revision), printable(t.State))
		if t.StatusMessage != "" {
			line += ": " + oneLine(t.StatusMessage)
		}
		if t.CancelOutcome != "" {
			line += "; tasks/cancel " + printable(t.CancelOutcome)
		}
		fmt.Fprintln(e.stdout, line)
	}
}
