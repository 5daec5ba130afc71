package mcp

import (
	"encoding/json"
	"sync"
	"time"
)

// TasksExtension is the identifier of the 2026-07-28 tasks extension, as it
// appears in capabilities.extensions.
const TasksExtension = "io.modelcontextprotocol/tasks"

// taskGeneration is which protocol's tasks a session speaks.
type taskGeneration int

const (
	noTasks        taskGeneration = iota
	tasksCore                     // 2025-11-25: params.task, CreateTaskResult{task}, tasks/result, tasks/list
	tasksExtension                // 2026-07-28 io.modelcontextprotocol/tasks: resultType "task", tasks/update
)

// taskState is what a client knows of tasks: the tools' task support, as
// listed, and the tasks being followed, by id.
type taskState struct {
	mu       sync.Mutex
	support  map[string]TaskSupport  // by tool name, from tools/list
	listed   bool                    // a whole tools/list was read for CallTool
	watching map[string][]*taskWatch // by task id, the calls following it
	// cancels counts the tasks/cancel requests on their way, which Close
	// lets go out before it closes the client.
	cancels pending
	// late holds, by request id, what to do with the reply to an
	// abandoned tools/call that may yet create a task; lateOrder is their
	// order, oldest first, so that at most maxLate are kept.
	late      map[int64]func(json.RawMessage)
	lateOrder []int64

	genOnce sync.Once
	gen     taskGeneration
}

// pending counts work on its way that Close waits for, within a bound. (A
// sync.WaitGroup may not be added to while it is waited for from zero.)
type pending struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n drops to zero
}

func (p *pending) add() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == 0 {
		p.zero = make(chan struct{})
	}
	p.n++
}

func (p *pending) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n--
	if p.n == 0 {
		close(p.zero)
	}
}

// wait waits until nothing is pending, or for d.
func (p *pending) wait(d time.Duration) {
	p.mu.Lock()
	if p.n == 0 {
		p.mu.Unlock()
		return
	}
	zero := p.zero
	p.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-zero:
	case <-t.C:
	}
}

func newTaskState() *taskState {
	return &taskState{support: map[string]TaskSupport{}, watching: map[string][]*taskWatch{}, late: map[int64]func(json.RawMessage){}}
}

// TasksSupported reports whether the negotiated session supports tasks:
// on 2025-11-25 the server declared capabilities.tasks.requests.tools.call;
// on 2026-07-28 it declared the io.modelcontextprotocol/tasks extension
// (which the client always declares). [Client.ProtocolVersion] says which
// generation it is.
func (c *Client) TasksSupported() bool { return c.taskGeneration() != noTasks }

// taskGeneration is the session's generation of tasks, worked out once
// (CallTool asks it on every call).
func (c *Client) taskGeneration() taskGeneration {
	c.tasks.genOnce.Do(func() { c.tasks.gen = c.detectTasks() })
	return c.tasks.gen
}

// detectTasks reads the generation from the revision and the server's
// capabilities, which the handshake settled.
func (c *Client) detectTasks() taskGeneration {
	switch {
	case c.rev.mrtr:
		var caps struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
		}
		if json.Unmarshal(c.info.Capabilities, &caps) == nil && caps.Extensions[TasksExtension] != nil {
			return tasksExtension
		}
	case c.rev.name == Version20251125:
		var caps struct {
			Tasks *struct {
				Requests *struct {
					Tools *struct {
						Call json.RawMessage `json:"call"`
					} `json:"tools"`
				} `json:"requests"`
			} `json:"tasks"`
		}
		if json.Unmarshal(c.info.Capabilities, &caps) == nil && caps.Tasks != nil && caps.Tasks.Requests != nil &&
			caps.Tasks.Requests.Tools != nil && caps.Tasks.Requests.Tools.Call != nil {
			return tasksCore
		}
	}
	return noTasks
}

// tasksExtension reports whether a result may be a task (2026-07-28).
func (c *Client) tasksExtension() bool { return c.taskGeneration() == tasksExtension }

// taskRevision reports whether the negotiated revision has tasks at all,
// whatever the server declared: which task methods exist.
func (c *Client) taskRevision() taskGeneration {
	switch {
	case c.rev.mrtr:
		return tasksExtension
	case c.rev.name == Version20251125:
		return tasksCore
	}
	return noTasks
}

// noteTaskSupport remembers the task support of listed tools, so that
// CallTool knows which must run as tasks.
func (c *Client) noteTaskSupport(tools []Tool) {
	c.tasks.mu.Lock()
	defer c.tasks.mu.Unlock()
	for _, t := range tools {
		c.tasks.support[t.Name] = t.TaskSupport
	}
}

// toolTaskSupport returns a tool's task support, and whether the client
// knows it: the tool was listed, or a whole listing did not have it.
func (c *Client) toolTaskSupport(name string) (TaskSupport, bool) {
	c.tasks.mu.Lock()
	defer c.tasks.mu.Unlock()
	s, ok := c.tasks.support[name]
	if !ok && c.tasks.listed {
		return TaskForbidden, true // a whole listing did not have it
	}
	return s, ok
}

// modernCapabilities are the client's capabilities on 2026-07-28: those of
// its handlers, and the tasks extension, which the client always follows.
func (c *Client) modernCapabilities() json.RawMessage {
	var caps map[string]any
	_ = json.Unmarshal(c.capabilities(), &caps)
	caps["extensions"] = map[string]any{TasksExtension: map[string]any{}}
	raw, _ := json.Marshal(caps)
	return raw
}
