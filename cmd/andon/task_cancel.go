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
		what := "tasks/cancel " + t.Outcome
		if t.ByHolder && t.Outcome == "" {
			what = "tasks/cancel sent by the worker holding the call"
		}
		fmt.Fprintf(e.stderr, "andon: task %s of %s on server %s (step %d, call %d): %s\n", t.TaskID, t.Tool, t.Server, t.Step, t.Call, what)
	}
}
