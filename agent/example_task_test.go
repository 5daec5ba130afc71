package agent_test

import (
	"context"
	"fmt"

	"github.com/andonhq/andon/agent"
)

// A tool whose call becomes a task on its server reports the task through
// the TaskTrace the executor puts on the call's context: Created, before
// the call waits for the task (the runtime persists the handle then, and
// an error means the call must not go on), and Status as the task moves.
func ExampleWithTaskTrace() {
	trace := &agent.TaskTrace{
		Created: func(t *agent.Task) error {
			fmt.Printf("persist: task %s on %s (%s)\n", t.ID, t.Server, t.Revision)
			return nil
		},
		Status: func(st agent.TaskState) { fmt.Println("status:", st.Status) },
	}
	ctx := agent.WithTaskTrace(context.Background(), trace)

	// What a tool does with it, say when its MCP server creates a task:
	if tr := agent.TaskTraceFrom(ctx); tr != nil {
		if err := tr.Created(&agent.Task{Server: "research", ID: "task-42", Revision: "2025-11-25"}); err != nil {
			fmt.Println("cancel the task and fail the call:", err)
			return
		}
		tr.Status(agent.TaskState{Status: agent.TaskCompleted})
	}
	// Output:
	// persist: task task-42 on research (2025-11-25)
	// status: completed
}
