package mcp

import (
	"encoding/json"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
)

// maxLate bounds how many abandoned tools/call the client keeps watching
// for a late CreateTaskResult: past it the oldest is forgotten.
const maxLate = 64

// expectLate remembers what to do if the reply to abandoned request id
// comes after all.
func (c *Client) expectLate(id int64, f func(json.RawMessage)) {
	c.tasks.mu.Lock()
	defer c.tasks.mu.Unlock()
	if len(c.tasks.lateOrder) == maxLate {
		delete(c.tasks.late, c.tasks.lateOrder[0])
		c.tasks.lateOrder = c.tasks.lateOrder[1:]
	}
	c.tasks.late[id] = f
	c.tasks.lateOrder = append(c.tasks.lateOrder, id)
}

// takeLate returns, and forgets, what to do with a late reply to id.
func (c *Client) takeLate(id jsonrpc.ID) func(json.RawMessage) {
	n, ok := id.Int64()
	if !ok {
		return nil
	}
	c.tasks.mu.Lock()
	defer c.tasks.mu.Unlock()
	f := c.tasks.late[n]
	if f == nil {
		return nil
	}
	delete(c.tasks.late, n)
	for i, x := range c.tasks.lateOrder {
		if x == n {
			c.tasks.lateOrder = append(c.tasks.lateOrder[:i:i], c.tasks.lateOrder[i+1:]...)
			break
		}
	}
	return f
}

// cancelLateTask is the late-reply handler of a tools/call that may become
// a task: a call abandoned before its CreateTaskResult came still created
// the task, which nothing follows. It is cancelled, and nothing of it
// reaches any caller. It runs on the reader: the cancel goes in the
// background.
func (c *Client) cancelLateTask(gen taskGeneration, name string) func(json.RawMessage) {
	return func(raw json.RawMessage) {
		var res callToolResponse
		if json.Unmarshal(raw, &res) != nil {
			return
		}
		id := ""
		switch {
		case gen == tasksCore && res.Task != nil:
			id = res.Task.TaskID
		case gen == tasksExtension && res.ResultType == "task":
			id = res.TaskID
		}
		if id == "" {
			return // a plain late result: dropped, as any
		}
		c.logger.Info("mcp: cancelling a task created after its call was abandoned", "tool", name, "task_id", id)
		c.cancelTaskBackground(c.bgCtx, id, nil)
	}
}
