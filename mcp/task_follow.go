package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// Polling bounds: a server that gives no pollInterval is polled every
// defaultPollInterval; one that asks for less than minPollInterval gets
// that, so a bad value cannot make the client spin.
const (
	defaultPollInterval = time.Second
	minPollInterval     = 5 * time.Millisecond
)

// taskWatch receives the status notifications of one task a call follows.
// Only the newest state is kept: a status is a snapshot, not a delta.
type taskWatch struct {
	sig    chan struct{} // capacity 1
	mu     sync.Mutex
	latest *detailedTask
}

func (w *taskWatch) put(d *detailedTask) {
	w.mu.Lock()
	if w.latest == nil || !w.latest.Status.Terminal() { // a terminal status is final
		w.latest = d
	}
	w.mu.Unlock()
	select {
	case w.sig <- struct{}{}:
	default:
	}
}

func (w *taskWatch) take() *detailedTask {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := w.latest
	w.latest = nil
	return d
}

func (c *Client) watchTask(id string) *taskWatch {
	w := &taskWatch{sig: make(chan struct{}, 1)}
	c.tasks.mu.Lock()
	c.tasks.watching[id] = append(c.tasks.watching[id], w)
	c.tasks.mu.Unlock()
	return w
}

// unwatchTask stops delivery to w: a status that arrives later is dropped.
func (c *Client) unwatchTask(id string, w *taskWatch) {
	c.tasks.mu.Lock()
	defer c.tasks.mu.Unlock()
	ws := c.tasks.watching[id]
	for i, x := range ws {
		if x == w {
			ws = append(ws[:i:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(c.tasks.watching, id)
		return
	}
	c.tasks.watching[id] = ws
}

// receiveTaskStatus takes a notifications/tasks/status (2025-11-25) or
// notifications/tasks (2026-07-28). It runs on the reader: it only hands
// the state over.
func (c *Client) receiveTaskStatus(params json.RawMessage) {
	var d detailedTask
	if err := json.Unmarshal(params, &d); err != nil || d.TaskID == "" || d.Status == "" {
		c.logger.Warn("mcp: ignoring malformed task status notification", "params", string(params))
		return
	}
	c.tasks.mu.Lock()
	ws := c.tasks.watching[d.TaskID]
	c.tasks.mu.Unlock()
	if len(ws) == 0 {
		c.logger.Debug("mcp: dropping status of a task no call follows", "task_id", d.TaskID)
		return
	}
	for _, w := range ws {
		w.put(&d)
	}
}

// cancelTaskBackground sends tasks/cancel for an interrupted task, off the
// caller's path: the caller already has its error. It is bounded by
// cancelNotifyTimeout and by Close; a failure is logged and goes no
// further. It carries callerCtx's values (egress reads the run id from
// them), never its cancellation. report, if set, is told the server's
// answer once, on the goroutine that sent the cancel (see
// [CallOptions].OnTaskCancel).
func (c *Client) cancelTaskBackground(callerCtx context.Context, id string, report func(Task, error)) {
	sentAt := c.cancelClock()
	c.tasks.cancels.add()
	started := c.goBackground(func() {
		defer c.tasks.cancels.done()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(callerCtx), cancelNotifyTimeout)
		defer cancel()
		defer context.AfterFunc(c.bgCtx, cancel)()
		t, err := c.CancelTask(ctx, id, &CallOptions{Timeout: cancelNotifyTimeout})
		if report != nil {
			answered := Task{ID: id}
			if t != nil {
				answered = *t
			}
			report(answered, err)
		}
		if err != nil && !errors.Is(err, ErrTaskTerminal) {
			c.logger.Warn("mcp: could not cancel task", "task_id", id, "error", err)
			return
		}
		c.logger.Debug("mcp: cancelled task", "task_id", id)
		if sentAt != nil {
			sentAt()
		}
	})
	if !started {
		c.tasks.cancels.done()
		c.logger.Warn("mcp: could not cancel task: client closed", "task_id", id)
		if report != nil {
			report(Task{ID: id}, fmt.Errorf("mcp: tasks/cancel %q not sent: %w", id, ErrClosed))
		}
	}
}

// follower follows one task to its end under one budget: the caller's
// context, and the call's Timeout (or the client's RequestTimeout) and
// MaxTotalTimeout, which bound the whole task as they bound a call.
type follower struct {
	c       *Client
	method  string          // named in an interruption's error
	caller  context.Context // the caller's: its end wins over the timers
	budget  context.Context // ends with the caller's or a timer
	stopFn  context.CancelCauseFunc
	o       CallOptions
	timeout time.Duration
	idle    *time.Timer
	total   *time.Timer

	token     string // a 2025-11-25 task's progress token, if it has one
	prog      *call  // receives that token's progress once the task exists
	inherited *call  // the creating request's receiver, drained with prog

	last     Task
	reported bool
}

func (c *Client) newFollower(ctx context.Context, opts *CallOptions, method string) (*follower, error) {
	f := &follower{c: c, method: method, caller: ctx}
	if opts != nil {
		f.o = *opts
	}
	if err := f.o.validate(); err != nil {
		return nil, err
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	if f.method == "" {
		f.method = "tasks/get"
	}
	f.budget, f.stopFn = context.WithCancelCause(ctx)
	f.timeout = f.o.Timeout
	if f.timeout == 0 && c.opts.RequestTimeout > 0 {
		f.timeout = c.opts.RequestTimeout
	}
	if f.timeout > 0 {
		f.idle = time.AfterFunc(f.timeout, func() { f.stopFn(errCallTimeout) })
	}
	if f.o.MaxTotalTimeout > 0 {
		f.total = time.AfterFunc(f.o.MaxTotalTimeout, func() { f.stopFn(errCallTimeout) })
	}
	return f, nil
}

func (f *follower) stop() {
	if f.idle != nil {
		f.idle.Stop()
	}
	if f.total != nil {
		f.total.Stop()
	}
	f.stopFn(nil)
	if f.prog != nil {
		key := strconv.Quote(f.token)
		f.c.mu.Lock()
		if f.c.progress[key] == f.prog {
			delete(f.c.progress, key)
		}
		f.c.mu.Unlock()
	}
}

// wantsProgress reports whether the caller asked for progress.
func (f *follower) wantsProgress() bool { return f.o.OnProgress != nil || f.o.ResetTimeoutOnProgress }

// progressed restarts the idle timer, if the caller asked for that.
func (f *follower) progressed() {
	if f.o.ResetTimeoutOnProgress && f.idle != nil {
		f.idle.Reset(f.timeout)
	}
}

// adoptProgress takes over the task's progress token from the request
// that created the task, which left its receiver registered: the token
// stays valid until the task ends. Progress already queued for the
// request, or pushed to it by a reader that looked it up just before, is
// delivered too.
func (f *follower) adoptProgress(token string) {
	key := strconv.Quote(token)
	f.token = token
	f.prog = &call{progSig: make(chan struct{}, 1)}
	f.c.mu.Lock()
	f.inherited = f.c.progress[key]
	f.c.progress[key] = f.prog
	f.c.mu.Unlock()
}

func (f *follower) deliverProgress() {
	if f.prog == nil {
		return
	}
	var ps []Progress
	if f.inherited != nil {
		ps = f.inherited.takeProgress()
	}
	for _, p := range append(ps, f.prog.takeProgress()...) {
		if f.o.OnProgress != nil {
			f.o.OnProgress(p)
		}
		f.progressed()
	}
}

// pollOptions are the options of one tasks/get or tasks/update: the
// client's RequestTimeout bounds each, the follower's budget all of them.
func (f *follower) pollOptions() *CallOptions { return &CallOptions{} }

// report tells OnTaskStatus of a change of status.
func (f *follower) report(t Task) {
	if f.reported && t.Status == f.last.Status && t.StatusMessage == f.last.StatusMessage {
		return
	}
	f.last, f.reported = t, true
	f.progressed()
	if f.o.OnTaskStatus != nil {
		f.o.OnTaskStatus(t)
	}
}

// interrupted cancels the task and returns the caller's error — unless the
// caller's own context ended and its DetachTask says to leave the task to
// run: then nothing is sent.
func (f *follower) interrupted(id string) error {
	if f.caller.Err() != nil && f.o.DetachTask != nil && f.o.DetachTask(context.Cause(f.caller)) {
		f.c.logger.Info("mcp: leaving a task to run on the server: the caller detached from it", "task_id", id)
		return interruption(f.method, f.caller)
	}
	f.c.cancelTaskBackground(f.caller, id, f.o.OnTaskCancel)
	return interruption(f.method, f.caller)
}

func pollInterval(d *detailedTask) time.Duration {
	iv := d.task().PollInterval
	switch {
	case iv == 0:
		return defaultPollInterval
	case iv < minPollInterval:
		return minPollInterval
	}
	return iv
}

// taskOutcome is what tasks/result gave.
type taskOutcome struct {
	res *CallToolResult
	err error
}

// resultFetch is a tasks/result in flight on a goroutine of its own, so
// that the follower goes on taking status and progress while it blocks.
type resultFetch struct {
	done   chan taskOutcome // capacity 1
	cancel context.CancelFunc
}

// fetchResult starts tasks/result for task id, bounded by ctx (the task's
// budget; RequestTimeout does not apply: the request blocks until the task
// ends).
func (c *Client) fetchResult(ctx context.Context, id string) *resultFetch {
	ctx, cancel := context.WithCancel(ctx)
	r := &resultFetch{done: make(chan taskOutcome, 1), cancel: cancel}
	go func() {
		var res struct {
			resultKind
			CallToolResult
		}
		err := c.taskRequest(ctx, "tasks/result", &taskIDParams{TaskID: id}, id, &CallOptions{noDefaultTimeout: true}, &res)
		if err != nil {
			r.done <- taskOutcome{err: err}
			return
		}
		if res.Content == nil {
			res.Content = []Content{}
		}
		r.done <- taskOutcome{res: &res.CallToolResult}
	}()
	return r
}

// doneChan is nil (never ready) for no fetch.
func (r *resultFetch) doneChan() <-chan taskOutcome {
	if r == nil {
		return nil
	}
	return r.done
}

// stop abandons the fetch and waits for its goroutine.
func (r *resultFetch) stop() {
	r.cancel()
	<-r.done
}

// follow waits for task d to end and returns its result. w is the task's
// watch, registered by the caller.
func (f *follower) follow(w *taskWatch, d *detailedTask) (*CallToolResult, error) {
	c := f.c
	id := d.TaskID
	answered := map[string]bool{} // 2026-07-28 input requests answered
	var fetch *resultFetch        // a 2025-11-25 tasks/result in flight
	defer func() {
		if fetch != nil {
			fetch.stop()
		}
	}()
	poll := time.NewTimer(pollInterval(d))
	defer poll.Stop()
	var progSig chan struct{}
	if f.prog != nil {
		progSig = f.prog.progSig
	}
	for {
		f.deliverProgress()
		if f.budget.Err() != nil {
			return nil, f.interrupted(id)
		}
		if c.taskRevision() == tasksExtension {
			switch d.Status {
			case TaskCompleted:
				return toolResultOf(id, d.Result)
			case TaskFailed:
				te := &TaskError{ID: id, Status: TaskFailed, Message: d.StatusMessage}
				if d.Error != nil {
					te.Err = d.Error
				}
				return nil, te
			case TaskCancelled:
				return nil, &TaskError{ID: id, Status: TaskCancelled, Message: d.StatusMessage}
			case TaskInputRequired:
				if err := f.answer(id, d, answered); err != nil {
					if f.budget.Err() != nil {
						return nil, f.interrupted(id)
					}
					c.cancelTaskBackground(f.caller, id, f.o.OnTaskCancel) // it would wait for input forever
					return nil, err
				}
			}
		} else {
			switch d.Status {
			case TaskCancelled:
				return nil, &TaskError{ID: id, Status: TaskCancelled, Message: d.StatusMessage}
			case TaskCompleted, TaskFailed, TaskInputRequired:
				// tasks/result blocks until the task ends; on the
				// way the server asks for its input (server requests,
				// answered by the client's handlers).
				if fetch == nil {
					fetch = c.fetchResult(f.budget, id)
				}
			}
		}
		select {
		case <-f.budget.Done():
		case <-c.closed:
			return nil, c.err()
		case <-w.sig:
			if nd := w.take(); nd != nil && !d.Status.Terminal() {
				d = nd
				f.report(d.task())
			}
		case <-poll.C:
			nd, err := c.getTask(f.budget, id, f.pollOptions())
			switch {
			case err == nil:
				if !d.Status.Terminal() {
					d = nd
					f.report(d.task())
				}
			case f.budget.Err() != nil:
			case errors.Is(err, ErrTimeout):
				// One poll unanswered in time is no verdict on the
				// task: poll again, within the budget.
				c.logger.Warn("mcp: tasks/get timed out; polling again", "task_id", id)
			default:
				return nil, err
			}
			poll.Reset(pollInterval(d))
		case r := <-fetch.doneChan():
			fetch.cancel()
			fetch = nil
			if f.budget.Err() != nil {
				continue
			}
			if r.err != nil {
				var rpcErr *RPCError
				if errors.As(r.err, &rpcErr) && !errors.Is(r.err, ErrTaskNotFound) {
					status := TaskFailed
					if d.Status == TaskCancelled {
						status = TaskCancelled
					}
					return nil, &TaskError{ID: id, Status: status, Message: d.StatusMessage, Err: rpcErr}
				}
				return nil, r.err
			}
			return r.res, nil
		case <-progSig:
		}
	}
}

// answer fulfils the input requests of an input_required task
// (2026-07-28) that it has not answered yet, and sends them with
// tasks/update. A key is answered once: polls repeat the outstanding ones.
func (f *follower) answer(id string, d *detailedTask, answered map[string]bool) error {
	fresh := map[string]json.RawMessage{}
	for k, v := range d.InputRequests {
		if !answered[k] {
			fresh[k] = v
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	responses, err := f.c.answerInputRequests(f.budget, fresh)
	if err != nil {
		return fmt.Errorf("mcp: task %s: %w", id, err)
	}
	for k := range fresh {
		answered[k] = true
	}
	var ack resultKind
	return f.c.taskRequest(f.budget, "tasks/update", &taskUpdateParams{TaskID: id, Responses: responses}, id, f.pollOptions(), &ack)
}

// toolResultOf decodes the result of a completed task.
func toolResultOf(id string, raw json.RawMessage) (*CallToolResult, error) {
	if len(raw) == 0 {
		return nil, &ProtocolError{Reason: fmt.Sprintf("task %s completed without a result", id)}
	}
	var res CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, &ProtocolError{Reason: fmt.Sprintf("task %s: malformed result: %v", id, err)}
	}
	if res.Content == nil {
		res.Content = []Content{}
	}
	return &res, nil
}
