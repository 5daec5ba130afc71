package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
)

// CallOptions tune one request. A nil *CallOptions is the zero value.
// Cancellation itself comes from the context passed with the request.
type CallOptions struct {
	// Timeout bounds the request on a connected client: its send, the wait
	// for its response and any rounds of input the server asks for (MRTR).
	// It does not bound connecting, which [Connect] does; a caller with one
	// budget for a whole operation — reconnecting included — puts it in the
	// deadline of the context it gives both. When Timeout passes, the
	// request is cancelled on the wire and returns an error matching
	// ErrTimeout. It replaces the client's RequestTimeout. Zero means the
	// client's RequestTimeout; negative is an error.
	Timeout time.Duration

	// OnProgress, if set, asks the server for progress notifications (a
	// unique progress token is sent) and receives them. It runs on the
	// calling goroutine, never after the call has returned, so it needs no
	// locking; keep it short, since the call cannot return while it runs.
	OnProgress func(Progress)

	// ResetTimeoutOnProgress restarts the Timeout whenever the server
	// reports progress. A progress token is sent even without OnProgress.
	// Pair it with MaxTotalTimeout: a server that reports progress forever
	// otherwise holds the call forever.
	ResetTimeoutOnProgress bool

	// MaxTotalTimeout bounds the request however much progress it reports.
	// Zero means no such bound; negative is an error.
	MaxTotalTimeout time.Duration

	// Task runs a tool whose TaskSupport is "optional" as a task
	// (2025-11-25); a "required" one always runs as one. On 2026-07-28 the
	// server alone decides, and Task changes nothing. For a call that
	// becomes a task, Timeout and MaxTotalTimeout bound the whole task, not
	// only its first request; see [Client.CallTool].
	Task bool

	// TaskTTL asks the server to keep a task this long after it is created
	// (2025-11-25 task.ttl). Zero leaves it to the server.
	TaskTTL time.Duration

	// OnTaskCreated, if set, is told once, on the calling goroutine, when
	// the server has created the task for the call and before the call
	// waits on it: the moment to persist the handle (the Task's ID, with
	// the server and [Client.ProtocolVersion]). If it returns an error the
	// task is cancelled (tasks/cancel, off the caller's path) and the call
	// fails with that error, wrapped.
	OnTaskCreated func(Task) error

	// OnTaskStatus, if set, is told each change of the task's status that
	// the client sees (a notification or a poll), on the calling
	// goroutine, never after the call has returned.
	OnTaskStatus func(Task)

	// OnTaskCancel, if set, is told once what the server said to the
	// tasks/cancel the client sent for the call's task (when the call's
	// context ended or its budget passed, OnTaskCreated failed, or the
	// task asked for input nobody could give): the Task the server
	// returned (at least its ID), and nil for an acknowledged cancel, an
	// error matching [ErrTaskTerminal] for a task that had ended already,
	// [ErrTaskNotFound] for one the server does not know, the server's
	// [*RPCError] for another refusal, or another error (a timeout,
	// [ErrClosed]) when no answer came. It runs on the
	// goroutine that sent the cancel, after the call has returned — so it
	// must be safe to run concurrently with the caller — and it delays
	// [Client.Close] while it runs: keep it short (bounded store writes).
	// It is not called when no tasks/cancel was sent.
	OnTaskCancel func(Task, error)

	// DetachTask, if set, is asked — once, on the calling goroutine, with
	// context.Cause of the call's context — when that context ends while
	// the call follows a task. True leaves the task running on the
	// server: no tasks/cancel is sent and the call returns its usual
	// error (matching ErrCancelled or ErrTimeout), so that another client
	// can follow the task by its id ([Client.FollowTask]). A process that
	// shuts down, not one whose work was cancelled, detaches. False, or
	// nil, cancels the task. The call's own Timeout and MaxTotalTimeout
	// always cancel it.
	DetachTask func(cause error) bool

	// OnCancelOutcome, if set, is told what became of the call once it
	// was cancelled (its context ended, or a timeout passed, after some of
	// the request went out): [CancelCompletedAnyway] if a result came
	// after all, [CancelConfirmed] if the stdio server exited, else
	// [CancelUnconfirmed] once [ClientOptions].CancelOutcomeWindow has
	// passed. It is told once, on a goroutine of the client's (its
	// reader, for a late result), and must not block. Not told for a call
	// that completed, whose request never left, or that Close ended.
	OnCancelOutcome func(CancelOutcome)

	// quiet: the request is never cancelled by notification (a task
	// method: tasks/* are abandoned by dropping them; on a stream with a
	// response stream, by closing it).
	quiet bool
	// noDefaultTimeout: RequestTimeout does not apply (tasks/result, which
	// blocks until the task ends, under the budget of the whole task).
	noDefaultTimeout bool
	// onLateReply, if set, is given the result of the request if it
	// arrives after the request was abandoned (a tools/call that may have
	// become a task: the task must still be cancelled). It runs on the
	// reader and must not block.
	onLateReply func(json.RawMessage)
	// progressToken, if set, is the token the request carries instead of
	// a fresh one: a task's token outlives the request that created it.
	// The request's receiver stays registered until the caller's replaces
	// it (see follower.adoptProgress), so nothing falls between the two.
	progressToken string
}

func (o *CallOptions) validate() error {
	if o.Timeout < 0 {
		return fmt.Errorf("mcp: negative Timeout %v", o.Timeout)
	}
	if o.MaxTotalTimeout < 0 {
		return fmt.Errorf("mcp: negative MaxTotalTimeout %v", o.MaxTotalTimeout)
	}
	if o.TaskTTL < 0 {
		return fmt.Errorf("mcp: negative TaskTTL %v", o.TaskTTL)
	}
	return nil
}

// result is what a request's result decodes into: a struct that embeds
// resultKind, so that one decode yields both the result and its kind.
type result interface {
	kind() *resultKind
}

// resultKind holds the fields 2026-07-28 adds to every result.
type resultKind struct {
	ResultType    string                     `json:"resultType"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	RequestState  json.RawMessage            `json:"requestState"`
}

func (k *resultKind) kind() *resultKind { return k }

// maxRounds bounds the multi-round-trip requests of 2026-07-28: how many
// times a server may answer input_required to one request.
const maxRounds = 10

// cancelNotifyTimeout bounds the delivery of one notifications/cancelled,
// which runs after the caller has its error back.
const cancelNotifyTimeout = 5 * time.Second

// call is one request in flight.
type call struct {
	id        int64
	handshake bool // initialize or server/discover: never cancelled by notification
	quiet     bool // a task method: never cancelled by notification either
	onLate    func(json.RawMessage)
	onOutcome func(CancelOutcome)
	span      *reqSpan    // nil when not tracing
	sent      atomic.Bool // some of the request may have reached the wire
	idle      timeout     // the request's Timeout (or RequestTimeout), if any
	reply     chan reply  // capacity 1; written once, by whoever took the call

	progMu   sync.Mutex
	progress []Progress
	progSig  chan struct{} // capacity 1
}

type reply struct {
	msg *jsonrpc.Message
	err error
}

// progressQueueMax bounds the progress a call holds for its caller. Past it
// the oldest is dropped: a server flooding progress cannot grow memory.
const progressQueueMax = 256

func (cl *call) pushProgress(p Progress) {
	cl.progMu.Lock()
	if len(cl.progress) == progressQueueMax {
		cl.progress = cl.progress[1:]
	}
	cl.progress = append(cl.progress, p)
	cl.progMu.Unlock()
	select {
	case cl.progSig <- struct{}{}:
	default:
	}
}

func (cl *call) takeProgress() []Progress {
	cl.progMu.Lock()
	defer cl.progMu.Unlock()
	p := cl.progress
	cl.progress = nil
	return p
}

// request is the one path every request takes: it checks for interruption
// before anything is sent, after the send returns and while it waits; it
// runs the rounds of a multi-round-trip request; and on interruption it
// forgets the call (a late reply is dropped) and signals the server as the
// transport and revision require. The result is decoded into out.
func (c *Client) request(ctx context.Context, method string, params requestParams, opts *CallOptions, handshake bool, out result) error {
	if c.tracer == nil || ctx.Err() != nil {
		return c.requestSpanned(ctx, method, params, opts, handshake, out, nil)
	}
	ctx, span := c.startSpan(ctx, method, params)
	err := c.requestSpanned(ctx, method, params, opts, handshake, out, span)
	span.finish(err)
	return err
}

// requestSpanned is request, recorded on span (nil when not tracing).
func (c *Client) requestSpanned(ctx context.Context, method string, params requestParams, opts *CallOptions, handshake bool, out result, span *reqSpan) error {
	if ctx.Err() != nil {
		return interruption(method, ctx) // nothing sent, no id used
	}
	var o CallOptions
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		return err
	}
	if err := c.err(); err != nil {
		return err
	}

	timeout := o.Timeout
	if timeout == 0 && c.opts.RequestTimeout > 0 && !handshake && !o.noDefaultTimeout {
		timeout = c.opts.RequestTimeout
	}
	waitCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	cl := &call{handshake: handshake, quiet: o.quiet, onLate: o.onLateReply, onOutcome: o.OnCancelOutcome, reply: make(chan reply, 1), span: span}
	if timeout > 0 {
		cl.idle.stop = stop
		c.timeouts.start(&cl.idle, timeout)
		defer c.timeouts.stop(&cl.idle)
	}
	if o.MaxTotalTimeout > 0 {
		total := time.AfterFunc(o.MaxTotalTimeout, func() { stop(errCallTimeout) })
		defer total.Stop()
	}

	var token string
	if o.OnProgress != nil || o.ResetTimeoutOnProgress {
		token = o.progressToken
		if token == "" {
			token = c.newProgressToken()
		}
		cl.progSig = make(chan struct{}, 1)
		c.mu.Lock()
		c.progress[strconv.Quote(token)] = cl
		c.mu.Unlock()
		defer func() {
			if o.progressToken != "" {
				return // the caller's to end
			}
			c.mu.Lock()
			delete(c.progress, strconv.Quote(token))
			c.mu.Unlock()
		}()
	}
	onProgress := func(p Progress) {
		if o.OnProgress != nil {
			o.OnProgress(p)
		}
		if o.ResetTimeoutOnProgress && timeout > 0 {
			c.timeouts.restart(&cl.idle, timeout)
		}
	}

	base := params.base()
	for round := 1; ; round++ {
		if round > maxRounds {
			return &ProtocolError{Reason: fmt.Sprintf("%s: server asked for input more than %d times", method, maxRounds)}
		}
		base.Meta = c.requestMeta(token)
		if span != nil {
			base.Meta = span.withTrace(ctx, base.Meta)
		}
		msg, err := c.exchange(ctx, waitCtx, cl, method, params, onProgress)
		if err != nil {
			return err
		}
		// One decode serves both: out embeds resultKind.
		if err := decodeResult(msg.Result, out); err != nil {
			return &ProtocolError{Reason: fmt.Sprintf("%s: malformed result: %v", method, err)}
		}
		kind := out.kind()
		if !c.rev.mrtr {
			kind.ResultType = "" // a handshake-era result is always complete
		}
		switch kind.ResultType {
		case "", "complete":
		case "task":
			if _, ok := out.(taskResult); !ok || !c.tasksExtension() {
				return &ProtocolError{Reason: method + ": a task result for a request that cannot become a task"}
			}
		case "input_required":
			if len(kind.InputRequests) == 0 && kind.RequestState == nil {
				return &ProtocolError{Reason: method + ": input_required result with neither inputRequests nor requestState"}
			}
			responses, err := c.answerInputRequests(waitCtx, kind.InputRequests)
			// Interrupted while the handlers ran: no retry goes out, even
			// with their answers (a handler that saw its context end may
			// well answer "cancel" rather than fail).
			if waitCtx.Err() != nil {
				return interruption(method, ctx)
			}
			if err != nil {
				return err
			}
			base.InputResponses, base.RequestState = responses, kind.RequestState
			reflect.ValueOf(out).Elem().SetZero() // nothing of this round leaks into the next
			continue
		default:
			return &ProtocolError{Reason: fmt.Sprintf("%s: unknown resultType %q", method, kind.ResultType)}
		}
		return nil
	}
}

// exchange sends one round of a request and waits for its response.
func (c *Client) exchange(ctx, waitCtx context.Context, cl *call, method string, params requestParams, onProgress func(Progress)) (*jsonrpc.Message, error) {
	raw, err := encodeParams(params)
	if err != nil {
		return nil, fmt.Errorf("mcp: encoding %s params: %w", method, err)
	}
	cl.id = c.nextID.Add(1)
	cl.span.sent(cl.id)
	cl.sent.Store(false)
	if err := c.register(cl); err != nil {
		return nil, err
	}
	msg := &jsonrpc.Message{ID: jsonrpc.Int(cl.id), Method: method, Params: raw}
	if err := c.conn.send(waitCtx, msg); err != nil {
		if waitCtx.Err() != nil {
			c.abandon(ctx, cl, !errors.Is(err, errNotSent), stopCause(waitCtx))
			return nil, interruption(method, ctx)
		}
		c.takeCall(msg.ID)
		return nil, fmt.Errorf("mcp: sending %s: %w", method, err)
	}
	cl.sent.Store(true)
	for {
		if waitCtx.Err() != nil {
			c.abandon(ctx, cl, true, stopCause(waitCtx))
			return nil, interruption(method, ctx)
		}
		select {
		case r := <-cl.reply:
			if waitCtx.Err() != nil {
				// Interrupted while the reply arrived: drop it.
				c.abandon(ctx, cl, true, stopCause(waitCtx))
				return nil, interruption(method, ctx)
			}
			// Progress the server sent before its reply belongs to
			// this call: hand it over before returning.
			if cl.progSig != nil {
				for _, p := range cl.takeProgress() {
					onProgress(p)
				}
			}
			if r.err != nil {
				return nil, r.err
			}
			if e := r.msg.Error; e != nil {
				return nil, &RPCError{Code: e.Code, Message: e.Message, Data: e.Data}
			}
			return r.msg, nil
		case <-cl.progSig:
			for _, p := range cl.takeProgress() {
				onProgress(p)
			}
		case <-waitCtx.Done():
		case <-c.closed:
			c.takeCall(msg.ID)
			return nil, c.err()
		}
	}
}

func (c *Client) register(cl *call) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closeErr != nil {
		return c.closeErr
	}
	c.calls[cl.id] = cl
	return nil
}

// err returns the reason the client is closed, or nil.
func (c *Client) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeErr
}

// abandon forgets an interrupted call, so a late reply or progress is
// dropped, and, if the request may have reached the wire, tells the server.
// The caller does not wait for the notification. cause (see stopCause)
// ends the request's own context in the transport. The notification carries
// callerCtx's values (an egress transport reads the run id from them), never
// its cancellation.
func (c *Client) abandon(callerCtx context.Context, cl *call, sent bool, cause error) {
	id := jsonrpc.Int(cl.id)
	c.takeCall(id)
	if !sent {
		return
	}
	late := cl.onLate
	if cl.onOutcome != nil && !cl.handshake {
		late = c.watchCancel(cl.id, cl.onOutcome, late)
	}
	if late != nil {
		c.expectLate(cl.id, late)
	}
	sentAt := c.cancelClock()
	if cl.handshake || cl.quiet || !c.conn.notifiesCancel(c.rev) {
		if !cl.handshake && !cl.quiet {
			cl.span.abandoned(callerCtx, signalStreamClosed)
		}
		c.conn.abandon(id, cause)
		if !cl.handshake && !cl.quiet {
			cl.span.signalled(signalStreamClosed)
			if sentAt != nil {
				sentAt() // the closed response stream is the signal
			}
		}
		return
	}
	cl.span.abandoned(callerCtx, signalNotification)
	if cl.span != nil {
		// The span ends once the notification is out (or failed).
		inner := sentAt
		sentAt = func() {
			cl.span.signalled(signalNotification)
			if inner != nil {
				inner()
			}
		}
	}
	// On a byte stream with room, the notification is written now, from
	// the caller's goroutine: in a storm of cancels the callers wake one
	// after another, and each goes on to its own bookkeeping before a
	// goroutine started here would run (a hundred calls' signals went
	// out over 5 ms after the last of them woke, on two cores).
	if ds, ok := c.conn.(directSender); ok && c.sendCancelledNow(ds, cl.id, sentAt) {
		return
	}
	// The notification goes first and the response stream (if the
	// transport has one) is closed after it, or after abandonGrace if the
	// notification is slow: over HTTP the notification can then ride a
	// connection that is already open instead of dialling a new one, since
	// closing the stream takes its connection with it. The caller does not
	// wait for either.
	cl.span.hold()
	started := c.goBackground(func() {
		defer cl.span.release()
		if c.conn.abandonUnsent(id, cause) {
			return // it never reached the server: nothing to cancel
		}
		t := time.AfterFunc(abandonGrace, func() { c.conn.abandon(id, cause) })
		defer func() {
			t.Stop()
			c.conn.abandon(id, cause)
		}()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(callerCtx), cancelNotifyTimeout)
		defer cancel()
		defer context.AfterFunc(c.bgCtx, cancel)() // Close ends it too
		if c.sendCancelled(ctx, cl.id, "request cancelled by the client") && sentAt != nil {
			sentAt()
		}
	})
	if !started {
		cl.span.release()
		c.conn.abandon(id, cause)
	}
}

// abandonGrace bounds how long a cancelled request's response stream stays
// open while its cancellation notification is on its way.
const abandonGrace = 50 * time.Millisecond

// sendCancelled sends notifications/cancelled for request id and reports
// whether it went out. A failure is logged and goes no further: it must
// never replace the caller's error or break the connection.
func (c *Client) sendCancelled(ctx context.Context, id int64, reason string) bool {
	return c.cancelSent(id, c.conn.send(ctx, c.cancelledMessage(id, reason)))
}

// directSender is a connection that can write a message at once, from the
// caller's goroutine, when it need not wait for room or for other frames:
// written false means nothing went out, and the message takes send.
type directSender interface {
	sendNow(m *jsonrpc.Message) (written bool, err error)
}

// sendCancelledNow is sendCancelled when the connection can write the
// notification without waiting; it reports whether it did (or tried and
// failed, which it logs). Otherwise nothing was sent, and the caller sends
// it the ordinary way.
func (c *Client) sendCancelledNow(ds directSender, id int64, sentAt func()) bool {
	written, err := ds.sendNow(c.cancelledMessage(id, "request cancelled by the client"))
	if !written {
		return false
	}
	if c.cancelSent(id, err) && sentAt != nil {
		sentAt()
	}
	return true
}

// cancelledMessage is the notifications/cancelled of request id.
func (c *Client) cancelledMessage(id int64, reason string) *jsonrpc.Message {
	params := cancelledParams{RequestID: id, Reason: reason}
	if c.rev.metaEnvelope {
		params.Meta = c.requestMeta("")
	}
	raw, _ := json.Marshal(params)
	return &jsonrpc.Message{Method: "notifications/cancelled", Params: raw}
}

// cancelSent logs what became of request id's cancellation notification,
// whose send returned err, and reports whether it went out.
func (c *Client) cancelSent(id int64, err error) bool {
	if err != nil {
		c.logger.Warn("mcp: could not send cancellation notification", "request_id", id, "error", err)
		return false
	}
	c.logger.Debug("mcp: sent cancellation notification", "request_id", id)
	return true
}

// newProgressToken returns a progress token unique on this client.
func (c *Client) newProgressToken() string {
	return "andon-" + strconv.FormatInt(c.nextToken.Add(1), 10)
}
