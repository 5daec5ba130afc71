package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/internal/jsonrpc"
)

// What a task [Record] is about (with Options.Tasks). Record.Task is the
// task's id.
const (
	// TaskCreated: a tools/call became a task (Tool, ID of the request).
	TaskCreated = "task_created"
	// TaskCancelRequested: a tasks/cancel for the task arrived (At is
	// when), whatever the server then did with it.
	TaskCancelRequested = "task_cancel_requested"
	// TaskCancelled: the task's work saw its cancellation and stopped.
	TaskCancelled = "task_cancelled"
	// TaskFinished: the task reached a terminal status (Reason).
	TaskFinished = "task_finished"
	// TaskExpired: the task's TTL passed and the server forgot it.
	TaskExpired = "task_expired"
	// TaskForgotten: the server forgot the task on purpose (task_forget).
	TaskForgotten = "task_forgotten"
	// TaskInputAnswered: the client answered the task's input request.
	TaskInputAnswered = "task_input_answered"
)

// The task tools, offered with Options.Tasks. Each takes ttl_ms (the TTL
// the server gives the task; default 60000, or the client's task.ttl on
// 2025-11-25) and poll_ms (its pollInterval; default 20).
//
//   - task_wait {ms=60000} (required): works ms, then completes; a
//     tasks/cancel cancels it (recorded as TaskCancelRequested, then
//     TaskCancelled). Sends one progress notification when it starts, if
//     the call carried a progress token (over stdio).
//   - task_echo {text, ms=0} (optional): completes with text after ms; without
//     a task it answers at once.
//   - task_fail {message} (required): fails: on 2025-11-25 with an isError
//     result, on 2026-07-28 with a JSON-RPC error (failed, with error).
//   - task_ask (required): input_required, asking the client for a name
//     (elicitation/create: a server request on the tasks/result stream on
//     2025-11-25, an inputRequests entry answered with tasks/update on
//     2026-07-28, which stays listed until one more tasks/get has seen it,
//     so a client that answers a key twice shows), then completes with
//     "hello, NAME".
//   - task_stubborn {ms=60000} (required): ignores tasks/cancel, which it
//     acknowledges (on 2025-11-25 answering with its status, still
//     working), and completes after ms.
//   - task_reject_cancel {ms=60000} (required): answers tasks/cancel with
//     an internal error, and works on.
//   - task_forget (required): the server forgets the task as soon as it
//     has answered with it; tasks/get then says unknown (-32602).
//
// Every task tool also takes create_late: the server creates the task only
// once the tools/call has been cancelled, and then answers with it anyway
// (a late CreateTaskResult, which the client must cancel).
//
// A task's TTL expiring makes the server forget it (TaskExpired).
// Options.Stall works for task methods too ("tasks/get", "tasks/cancel").
var taskTools = map[string]mcp.TaskSupport{
	"task_wait":          mcp.TaskRequired,
	"task_echo":          mcp.TaskOptional,
	"task_fail":          mcp.TaskRequired,
	"task_ask":           mcp.TaskRequired,
	"task_stubborn":      mcp.TaskRequired,
	"task_reject_cancel": mcp.TaskRequired,
	"task_forget":        mcp.TaskRequired,
}

func taskToolList() []map[string]any {
	obj := func(props string) json.RawMessage {
		common := `"ttl_ms":{"type":"integer"},"poll_ms":{"type":"integer"}`
		if props != "" {
			common = props + "," + common
		}
		return json.RawMessage(`{"type":"object","properties":{` + common + `}}`)
	}
	desc := map[string][2]string{
		"task_wait":          {"Works ms milliseconds as a task; tasks/cancel stops it.", `"ms":{"type":"integer"}`},
		"task_echo":          {"Returns its text, as a task if asked.", `"text":{"type":"string"},"ms":{"type":"integer"}`},
		"task_fail":          {"A task that fails.", `"message":{"type":"string"}`},
		"task_ask":           {"A task that asks the client for a name.", ``},
		"task_stubborn":      {"A task that ignores tasks/cancel.", `"ms":{"type":"integer"}`},
		"task_reject_cancel": {"A task whose tasks/cancel is refused.", `"ms":{"type":"integer"}`},
		"task_forget":        {"A task the server forgets at once.", ``},
	}
	var out []map[string]any
	for _, name := range slices.Sorted(maps.Keys(taskTools)) {
		out = append(out, map[string]any{
			"name":        name,
			"description": desc[name][0],
			"inputSchema": obj(desc[name][1]),
			"execution":   map[string]any{"taskSupport": string(taskTools[name])},
		})
	}
	return out
}

// taskArgs are the task tools' arguments.
type taskArgs struct {
	MS         *int   `json:"ms"`
	CreateLate bool   `json:"create_late"`
	TTLMS      *int   `json:"ttl_ms"`
	PollMS     *int   `json:"poll_ms"`
	Text       string `json:"text"`
	Message    string `json:"message"`
}

// taskMeta is a 2025-11-25 tools/call's params.task.
type taskMeta struct {
	TTL *int64 `json:"ttl"`
}

// taskStore holds a server's tasks: they outlive the request, and the
// connection, that created them (any connection may get or cancel them).
type taskStore struct {
	mu    sync.Mutex
	next  int
	tasks map[string]*serverTask
}

// serverTask is one task and its work.
type serverTask struct {
	s      *Server
	id     string
	tool   string
	modern bool

	mu        sync.Mutex
	status    mcp.TaskStatus
	message   string
	created   time.Time
	updated   time.Time
	ttl       time.Duration
	poll      time.Duration
	result    map[string]any // a CallToolResult, once completed (or failed with isError)
	rpcErr    *jsonrpc.Error // a failed task's error (2026-07-28)
	inputReqs map[string]any // outstanding input requests (2026-07-28)
	changed   chan struct{}  // closed and replaced on every change
	waiters   []outlet       // 2025-11-25 tasks/result requests in flight
	notify    func(*jsonrpc.Message)

	// workCtx is the work's own context, made with the task (a
	// tasks/cancel may come before the work starts); cancelWork ends it.
	workCtx    context.Context
	cancelWork context.CancelCauseFunc
	input      chan map[string]json.RawMessage // tasks/update answers (2026-07-28)
	polled     chan struct{}                   // a tasks/get was answered (capacity 1)
	expiry     *time.Timer
}

// outlet is where a server request about a task can go: the connection
// and response of a tasks/result in flight.
type outlet struct {
	c   *serverConn
	out outbox
}

func (t *serverTask) wire() map[string]any {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.wireLocked()
}

// wireLocked is the task as tasks/get answers it, in its generation's shape.
func (t *serverTask) wireLocked() map[string]any {
	m := map[string]any{
		"taskId":        t.id,
		"status":        string(t.status),
		"createdAt":     t.created.UTC().Format(time.RFC3339Nano),
		"lastUpdatedAt": t.updated.UTC().Format(time.RFC3339Nano),
	}
	if t.message != "" {
		m["statusMessage"] = t.message
	}
	if t.modern {
		m["ttlMs"] = t.ttl.Milliseconds()
		m["pollIntervalMs"] = t.poll.Milliseconds()
		switch t.status {
		case mcp.TaskCompleted:
			m["result"] = t.result
		case mcp.TaskFailed:
			m["error"] = t.rpcErr
		case mcp.TaskInputRequired:
			m["inputRequests"] = t.inputReqs
		}
	} else {
		m["ttl"] = t.ttl.Milliseconds()
		m["pollInterval"] = t.poll.Milliseconds()
	}
	return m
}

// set moves the task to status, unless it is terminal already (a cancelled
// task stays cancelled even if its work finishes).
func (t *serverTask) set(status mcp.TaskStatus, message string, apply func()) bool {
	t.mu.Lock()
	if t.status.Terminal() {
		t.mu.Unlock()
		return false
	}
	t.status, t.message, t.updated = status, message, time.Now()
	if apply != nil {
		apply()
	}
	close(t.changed)
	t.changed = make(chan struct{})
	notify := t.notify
	params := mustJSON(t.wireLocked())
	t.mu.Unlock()
	if status.Terminal() {
		t.s.rec.add(Record{Kind: TaskFinished, Tool: t.tool, Task: t.id, Reason: string(status)})
	}
	if notify != nil {
		notify(&jsonrpc.Message{Method: "notifications/tasks/status", Params: params})
	}
	return true
}

func (t *serverTask) snapshot() (mcp.TaskStatus, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.status, t.changed
}

// serveTasks reports whether the server offers tasks on this request's
// revision, answering the request with an error if not.
func (c *serverConn) tasksOffered(m *jsonrpc.Message, base baseParams, modern bool, out outbox) bool {
	if !c.s.opts.Tasks || (!modern && !c.s.handshakeTasks()) {
		reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + m.Method})
		return false
	}
	if modern && !declaresTasks(base) {
		reply(out, m.ID, nil, missingTasksCapability())
		return false
	}
	return true
}

// handshakeTasks: tasks exist on 2025-11-25 only among handshake-era
// revisions; the server tells them apart by what it negotiated, which
// mcptest does not keep per connection, so it offers them when it serves
// 2025-11-25.
func (s *Server) handshakeTasks() bool { return slices.Contains(s.opts.Versions, mcp.Version20251125) }

func declaresTasks(base baseParams) bool {
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	_ = json.Unmarshal(base.Meta.ClientCapabilities, &caps)
	return caps.Extensions[mcp.TasksExtension] != nil
}

func missingTasksCapability() *jsonrpc.Error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{mcp.TasksExtension: map[string]any{}}}})
	return &jsonrpc.Error{Code: jsonrpc.CodeMissingClientCapability, Message: "Missing required client capability", Data: data}
}

// startTaskTool runs a task tool's tools/call: as a task when the client
// asked (2025-11-25 params.task) or declared the extension (2026-07-28),
// at once for task_echo otherwise, and else it refuses.
func (c *serverConn) startTaskTool(ctx context.Context, m *jsonrpc.Message, name string, rawArgs json.RawMessage, base baseParams, modern bool, out outbox) {
	var args taskArgs
	if len(rawArgs) > 0 {
		if err := json.Unmarshal(rawArgs, &args); err != nil {
			reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "arguments: " + err.Error()})
			return
		}
	}
	var p struct {
		Task *taskMeta `json:"task"`
	}
	_ = json.Unmarshal(m.Params, &p)
	asTask := p.Task != nil
	if modern {
		asTask = declaresTasks(base)
	}
	if !asTask {
		switch {
		case name == "task_echo":
			res := map[string]any{"content": []map[string]any{{"type": "text", "text": args.Text}}}
			if modern {
				res["resultType"] = "complete"
			}
			reply(out, m.ID, res, nil)
		case modern:
			reply(out, m.ID, nil, missingTasksCapability())
		default:
			reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "tool " + name + " requires task augmentation"})
		}
		return
	}
	if args.CreateLate {
		// A server that creates the task only once the request is
		// cancelled (notifications/cancelled, or the connection's end),
		// and answers with it anyway.
		c.spawn(ctx, m, func(rctx context.Context, _ string) {
			select {
			case <-rctx.Done():
			case <-c.s.done:
				return
			}
			c.createTask(m, name, p.Task, args, base, modern, out)
		})
		return
	}
	c.createTask(m, name, p.Task, args, base, modern, out)
}

// createTask creates the task of a tools/call, answers with it, and starts
// its work.
func (c *serverConn) createTask(m *jsonrpc.Message, name string, meta *taskMeta, args taskArgs, base baseParams, modern bool, out outbox) {
	ttl := time.Duration(intOr(args.TTLMS, 60000)) * time.Millisecond
	if args.TTLMS == nil && meta != nil && meta.TTL != nil {
		ttl = time.Duration(*meta.TTL) * time.Millisecond
	}
	t := c.s.newTask(name, modern, ttl, time.Duration(intOr(args.PollMS, 20))*time.Millisecond)
	if sc, ok := out.(*serverConn); ok && !modern {
		t.notify = func(msg *jsonrpc.Message) { sc.write(msg) }
	}
	c.s.rec.add(Record{Kind: TaskCreated, Tool: name, ID: idKey(m.ID), Task: t.id})
	var res map[string]any
	if modern {
		res = t.wire()
		res["resultType"] = "task"
	} else {
		res = map[string]any{"task": t.wire()}
	}
	// The task exists (tasks/get resolves) before the answer goes out.
	reply(out, m.ID, res, nil)
	if name == "task_forget" {
		c.s.forgetTask(t.id, TaskForgotten)
		return
	}
	if !modern && base.Meta.ProgressToken != nil && out == outbox(c) {
		params, _ := json.Marshal(map[string]any{"progressToken": base.Meta.ProgressToken, "progress": 0, "total": 1, "message": "task started"})
		c.write(&jsonrpc.Message{Method: "notifications/progress", Params: params})
	}
	c.s.runTask(t, args)
}

func (s *Server) newTask(tool string, modern bool, ttl, poll time.Duration) *serverTask {
	s.taskStore.mu.Lock()
	defer s.taskStore.mu.Unlock()
	s.taskStore.next++
	now := time.Now()
	t := &serverTask{
		s: s, id: "mcptest-task-" + strconv.Itoa(s.taskStore.next), tool: tool, modern: modern,
		status: mcp.TaskWorking, created: now, updated: now, ttl: ttl, poll: poll,
		changed: make(chan struct{}), input: make(chan map[string]json.RawMessage, 1), polled: make(chan struct{}, 1),
	}
	t.workCtx, t.cancelWork = context.WithCancelCause(context.Background())
	if s.taskStore.tasks == nil {
		s.taskStore.tasks = map[string]*serverTask{}
	}
	s.taskStore.tasks[t.id] = t
	if ttl > 0 {
		t.expiry = time.AfterFunc(ttl, func() { s.forgetTask(t.id, TaskExpired) })
	}
	return t
}

func (s *Server) task(id string) *serverTask {
	s.taskStore.mu.Lock()
	defer s.taskStore.mu.Unlock()
	return s.taskStore.tasks[id]
}

// forgetTask drops a task, stopping its work.
func (s *Server) forgetTask(id, kind string) {
	s.taskStore.mu.Lock()
	t := s.taskStore.tasks[id]
	delete(s.taskStore.tasks, id)
	s.taskStore.mu.Unlock()
	if t == nil {
		return
	}
	if t.expiry != nil {
		t.expiry.Stop()
	}
	t.cancelWork(errors.New("mcptest: task forgotten"))
	s.rec.add(Record{Kind: kind, Tool: t.tool, Task: id})
}

// stopTasks ends every task's work (Close).
func (s *Server) stopTasks() {
	s.taskStore.mu.Lock()
	ts := slices.Collect(maps.Values(s.taskStore.tasks))
	s.taskStore.mu.Unlock()
	for _, t := range ts {
		if t.expiry != nil {
			t.expiry.Stop()
		}
		t.cancelWork(errors.New("mcptest: server closed"))
	}
}

// runTask starts a task's work on a goroutine of its own, under a context
// of its own: the request that created the task has ended, and only
// tasks/cancel (or the TTL, or Close) stops it.
func (s *Server) runTask(t *serverTask, args taskArgs) {
	ctx, cancel := t.workCtx, t.cancelWork
	s.mu.Lock()
	closing := s.closing
	if !closing {
		s.tools.Add(1)
	}
	s.mu.Unlock()
	if closing {
		cancel(errors.New("mcptest: server closed"))
		return
	}
	go func() {
		defer s.tools.Done()
		defer cancel(nil)
		w := &taskWork{t: t, ctx: ctx, done: s.done}
		w.run(args)
	}()
}

// taskWork is a task tool's work.
type taskWork struct {
	t    *serverTask
	ctx  context.Context
	done <-chan struct{}
}

func (w *taskWork) sleep(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-w.ctx.Done():
		return false
	case <-w.done:
		return false
	}
}

func (w *taskWork) cancelled() {
	reason := ""
	if cause := context.Cause(w.ctx); cause != nil {
		reason = cause.Error()
	}
	w.t.s.rec.add(Record{Kind: TaskCancelled, Tool: w.t.tool, Task: w.t.id, Reason: reason})
}

func (w *taskWork) complete(text string, isError bool) {
	res := map[string]any{"content": []map[string]any{{"type": "text", "text": text}}}
	if isError {
		res["isError"] = true
	}
	status := mcp.TaskCompleted
	if isError && !w.t.modern {
		status = mcp.TaskFailed // 2025-11-25: a tool's isError fails the task
	}
	w.t.set(status, "", func() { w.t.result = res })
}

func (w *taskWork) run(a taskArgs) {
	switch w.t.tool {
	case "task_wait", "task_stubborn", "task_reject_cancel":
		ms := intOr(a.MS, 60000)
		if !w.sleep(time.Duration(ms) * time.Millisecond) {
			w.cancelled()
			return
		}
		w.complete(fmt.Sprintf("%s: worked %dms", w.t.tool, ms), false)
	case "task_echo":
		if !w.sleep(time.Duration(intOr(a.MS, 0)) * time.Millisecond) {
			w.cancelled()
			return
		}
		w.complete(a.Text, false)
	case "task_fail":
		msg := cmpOr(a.Message, "the task failed")
		if w.t.modern {
			w.t.set(mcp.TaskFailed, msg, func() {
				w.t.rpcErr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}
			})
			return
		}
		w.complete(msg, true)
	case "task_ask":
		w.ask()
	}
}

// askRequest is the elicitation task_ask makes.
var askRequest = map[string]any{
	"mode":    "form",
	"message": "Please enter your name.",
	"requestedSchema": map[string]any{
		"type":       "object",
		"properties": map[string]any{"name": map[string]any{"type": "string"}},
		"required":   []string{"name"},
	},
}

func (w *taskWork) ask() {
	t := w.t
	var answer json.RawMessage
	if t.modern {
		t.set(mcp.TaskInputRequired, "waiting for a name", func() {
			t.inputReqs = map[string]any{"name": map[string]any{"method": "elicitation/create", "params": askRequest}}
		})
		select {
		case responses := <-t.input:
			answer = responses["name"]
		case <-w.ctx.Done():
			w.cancelled()
			return
		case <-w.done:
			return
		}
		// The answer is taken, but the task shows the request as
		// outstanding until a poll has seen it so once more: a client
		// must answer a key once, however often polls repeat it.
		select {
		case <-t.polled:
		default:
		}
		select {
		case <-t.polled:
		case <-w.ctx.Done():
			w.cancelled()
			return
		case <-w.done:
			return
		}
	} else {
		t.set(mcp.TaskInputRequired, "waiting for a name", nil)
		// The request goes out on a tasks/result stream in flight.
		var via outlet
		for {
			t.mu.Lock()
			if len(t.waiters) > 0 {
				via = t.waiters[0]
			}
			changed := t.changed
			t.mu.Unlock()
			if via.c != nil {
				break
			}
			select {
			case <-changed:
			case <-w.ctx.Done():
				w.cancelled()
				return
			case <-w.done:
				return
			}
		}
		resp, ok := via.c.ask(w.ctx, via.out, "elicitation/create", map[string]any{
			"mode": "form", "message": askRequest["message"], "requestedSchema": askRequest["requestedSchema"],
			"_meta": map[string]any{"io.modelcontextprotocol/related-task": map[string]any{"taskId": t.id}},
		})
		if !ok {
			w.cancelled()
			return
		}
		if resp.Error != nil {
			w.complete("elicitation failed: "+resp.Error.Message, true)
			return
		}
		answer = resp.Result
	}
	t.s.rec.add(Record{Kind: TaskInputAnswered, Tool: t.tool, Task: t.id, Raw: answer})
	var res struct {
		Action  string `json:"action"`
		Content struct {
			Name string `json:"name"`
		} `json:"content"`
	}
	_ = json.Unmarshal(answer, &res)
	if res.Action != "accept" {
		w.complete("no name given ("+res.Action+")", true)
		return
	}
	t.set(mcp.TaskWorking, "", func() { t.inputReqs = nil })
	w.complete("hello, "+res.Content.Name, false)
}

// request sends a server→client request on out: its id, and where the
// client's response will arrive (buffered, so the reader never waits on a
// caller that has given up).
func (c *serverConn) request(out outbox, method string, params json.RawMessage) (jsonrpc.ID, <-chan *jsonrpc.Message) {
	ch := make(chan *jsonrpc.Message, 1)
	c.mu.Lock()
	c.nextID++
	id := jsonrpc.String("mcptest-" + strconv.Itoa(c.nextID))
	if c.pending == nil {
		c.pending = map[string]chan *jsonrpc.Message{}
	}
	c.pending[idKey(id)] = ch
	c.mu.Unlock()
	out.write(&jsonrpc.Message{ID: id, Method: method, Params: params})
	return id, ch
}

// ask sends a server→client request on out and waits for the answer.
func (c *serverConn) ask(ctx context.Context, out outbox, method string, params any) (*jsonrpc.Message, bool) {
	_, ch := c.request(out, method, mustJSON(params))
	select {
	case resp := <-ch:
		return resp, true
	case <-ctx.Done():
		return nil, false
	}
}

// serveTaskMethod answers tasks/get, tasks/result, tasks/list,
// tasks/cancel and tasks/update, as the request's revision defines them.
func (c *serverConn) serveTaskMethod(ctx context.Context, m *jsonrpc.Message, base baseParams, modern bool, out outbox) {
	if !c.tasksOffered(m, base, modern, out) {
		return
	}
	exists := map[string]bool{"tasks/get": true, "tasks/cancel": true, "tasks/result": !modern, "tasks/list": !modern, "tasks/update": modern}
	if !exists[m.Method] {
		reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + m.Method})
		return
	}
	if m.Method == "tasks/list" {
		c.s.taskStore.mu.Lock()
		ts := slices.Collect(maps.Values(c.s.taskStore.tasks))
		c.s.taskStore.mu.Unlock()
		slices.SortFunc(ts, func(a, b *serverTask) int { return a.created.Compare(b.created) })
		list := []map[string]any{}
		for _, t := range ts {
			if !t.modern {
				list = append(list, t.wire())
			}
		}
		reply(out, m.ID, map[string]any{"tasks": list}, nil)
		return
	}
	var p struct {
		TaskID         string                     `json:"taskId"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
	}
	_ = json.Unmarshal(m.Params, &p)
	t := c.s.task(p.TaskID)
	if t == nil {
		if m.Method == "tasks/cancel" {
			c.s.rec.add(Record{Kind: TaskCancelRequested, Task: p.TaskID, Reason: "unknown task"})
		}
		reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown task: " + p.TaskID})
		return
	}
	complete := func(res map[string]any) map[string]any {
		if modern {
			res["resultType"] = "complete"
		}
		return res
	}
	switch m.Method {
	case "tasks/get":
		reply(out, m.ID, complete(t.wire()), nil)
		select {
		case t.polled <- struct{}{}:
		default:
		}
	case "tasks/update":
		select {
		case t.input <- p.InputResponses:
		default: // an answer is already waiting: this one is a repeat
		}
		reply(out, m.ID, complete(map[string]any{}), nil)
	case "tasks/cancel":
		c.cancelTask(m, t, modern, out)
	case "tasks/result":
		c.spawn(ctx, m, func(rctx context.Context, key string) { c.taskResult(rctx, m, t, out) })
	}
}

// cancelTask answers tasks/cancel as the task's tool dictates.
func (c *serverConn) cancelTask(m *jsonrpc.Message, t *serverTask, modern bool, out outbox) {
	c.s.rec.add(Record{Kind: TaskCancelRequested, Tool: t.tool, Task: t.id, ID: idKey(m.ID)})
	ack := func() {
		if modern {
			reply(out, m.ID, map[string]any{"resultType": "complete"}, nil)
			return
		}
		reply(out, m.ID, t.wire(), nil)
	}
	switch t.tool {
	case "task_reject_cancel":
		reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "mcptest: this task cannot be cancelled"})
		return
	case "task_stubborn":
		ack() // and works on
		return
	}
	status, _ := t.snapshot()
	if status.Terminal() {
		if modern {
			ack() // cancellation is cooperative: nothing left to do
			return
		}
		reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "task already " + string(status)})
		return
	}
	// The task is cancelled before the answer goes out, and stays so.
	t.set(mcp.TaskCancelled, "cancelled by tasks/cancel", nil)
	t.cancelWork(errors.New("tasks/cancel"))
	ack()
}

// taskResult answers tasks/result (2025-11-25) once the task has ended,
// holding the request open meanwhile; a task that needs input sends its
// request on it.
func (c *serverConn) taskResult(ctx context.Context, m *jsonrpc.Message, t *serverTask, out outbox) {
	me := outlet{c: c, out: out}
	t.mu.Lock()
	t.waiters = append(t.waiters, me)
	close(t.changed)
	t.changed = make(chan struct{})
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.waiters = slices.DeleteFunc(t.waiters, func(o outlet) bool { return o == me })
		t.mu.Unlock()
	}()
	for {
		status, changed := t.snapshot()
		if status.Terminal() {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		case <-c.s.done:
			return
		}
	}
	t.mu.Lock()
	status, result := t.status, t.result
	t.mu.Unlock()
	meta := map[string]any{"io.modelcontextprotocol/related-task": map[string]any{"taskId": t.id}}
	if result == nil {
		reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "task " + string(status), Data: mustJSON(meta)})
		return
	}
	res := maps.Clone(result)
	res["_meta"] = meta
	reply(out, m.ID, res, nil)
}

// capabilities are what the server declares on 2026-07-28.
func (s *Server) capabilities() map[string]any {
	if !s.opts.Tasks {
		return capabilities
	}
	caps := maps.Clone(capabilities)
	caps["extensions"] = map[string]any{mcp.TasksExtension: map[string]any{}}
	return caps
}

// handshakeCapabilities are what the server declares to a handshake-era
// client: tasks for tools/call, listing and cancelling them (2025-11-25).
func (s *Server) handshakeCapabilities() map[string]any {
	if !s.opts.Tasks {
		return handshakeCapabilities
	}
	caps := maps.Clone(handshakeCapabilities)
	caps["tasks"] = map[string]any{"list": map[string]any{}, "cancel": map[string]any{}, "requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}
	return caps
}
