package api

import (
	"context"
	"time"

	"github.com/andonhq/andon/agent"
)

// The MCP tasks of a run's tool calls, as the API shows them: on a run's
// detail (live, with the event stream's refreshes), and in a cancel's
// answer, which says whether each task's server acknowledged tasks/cancel.

// Task is a tool call of a run that became an MCP task on its server.
type Task struct {
	CallRef
	Server        string `json:"server"`
	TaskID        string `json:"task_id"`
	Revision      string `json:"revision"`
	Status        string `json:"status"`
	StatusMessage string `json:"status_message,omitempty"`
	// State is what an operator is shown: the task's status, or
	// "cancelling" while the run is cancelled and its server has not yet
	// said the task is over.
	State         string     `json:"state"`
	CancelOutcome string     `json:"cancel_outcome,omitempty"`
	CancelAt      *time.Time `json:"cancel_at,omitempty"`
	Settled       bool       `json:"settled"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
}

// TaskCancel is what a cancel did about one of the run's tasks.
type TaskCancel struct {
	CallRef
	Server string `json:"server"`
	TaskID string `json:"task_id"`
	// ByHolder: a live worker holds the call and its MCP client sends
	// tasks/cancel; the answer shows on the run's tasks when it comes.
	ByHolder bool `json:"by_holder"`
	// Outcome is what the server said to the tasks/cancel: the one this
	// process sent, or the holder's if it was recorded already.
	// acknowledged, rejected or unreachable.
	Outcome string `json:"outcome,omitempty"`
}

func toTask(t *agent.Task, run agent.Status) Task {
	v := Task{CallRef: CallRef{Step: t.Step, Call: t.Call, Tool: t.Tool, ArgsDigest: t.ArgsDigest},
		Server: t.Server, TaskID: t.ID, Revision: t.Revision, Status: string(t.Status), StatusMessage: t.StatusMessage,
		State: string(t.Status), CancelOutcome: string(t.CancelOutcome), CancelAt: timePtr(t.CancelAt), Settled: t.Settled,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
	if !t.Status.Terminal() && (run == agent.StatusCancelled || !t.CancelAt.IsZero()) {
		v.State = "cancelling"
	}
	return v
}

func toTaskCancels(r *agent.CancelReport) []TaskCancel {
	out := []TaskCancel{}
	if r == nil {
		return out
	}
	for _, tc := range r.Tasks {
		t := tc.Task
		out = append(out, TaskCancel{CallRef: CallRef{Step: t.Step, Call: t.Call, Tool: t.Tool, ArgsDigest: t.ArgsDigest},
			Server: t.Server, TaskID: t.ID, ByHolder: tc.ByHolder, Outcome: string(tc.Outcome)})
	}
	return out
}

// runTasks returns the run's tasks, if the store keeps them.
func (s *server) runTasks(ctx context.Context, run *agent.Run) ([]Task, error) {
	ts, ok := s.cfg.Store.(agent.TaskStore)
	if !ok {
		return nil, nil
	}
	tasks, err := ts.TaskList(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	out := make([]Task, len(tasks))
	for i, t := range tasks {
		out[i] = toTask(t, run.Status)
	}
	return out, nil
}
