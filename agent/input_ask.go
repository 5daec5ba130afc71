package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// DefaultInputPollInterval is how often a segment waiting for an
// operator's answer reads its question, when no answer made in its own
// process wakes it first.
const DefaultInputPollInterval = 500 * time.Millisecond

// maxQuestionText bounds the server's question as stored and shown.
const maxQuestionText = 4 << 10

// Question is what a tool asks the operator on behalf of its server (an
// MCP elicitation).
type Question struct {
	Server  string
	Mode    InputMode // "" means InputForm
	Message string
	Schema  json.RawMessage // form questions: the requested schema
	URL     string          // url questions
}

// Answer is what the server is told: Action is "accept", "decline" or
// "cancel", as MCP elicitation names them; Content is an accepted form's
// values.
type Answer struct {
	Action  string
	Content json.RawMessage
}

// The actions of an [Answer].
const (
	ActionAccept  = "accept"
	ActionDecline = "decline"
	ActionCancel  = "cancel"
)

type askerKey struct{}

// asker puts the questions of one tool call to the operator: the segment
// that makes the call, the tool, and the round, captured when the call
// starts. No question outlives its call: once the call has returned, its
// questions still waiting end (cancelled), a new one is refused, and the
// segment goes on only once they have ended — a run never records its next
// step while it still waits for input.
type asker struct {
	s     *segment
	tool  string
	round int

	mu     sync.Mutex
	closed bool
	stop   chan struct{} // closed once the call has returned
	asking sync.WaitGroup

	logs serverLogs // the server's log messages recorded (serverlog.go)
}

// withAsker returns ctx, the context of a tool call, able to ask the
// operator ([Ask]), and the func to call once the call has returned.
func withAsker(ctx context.Context, s *segment, tool string, round int) (context.Context, func()) {
	a := &asker{s: s, tool: tool, round: round, stop: make(chan struct{})}
	return context.WithValue(ctx, askerKey{}, a), a.end
}

// begin counts a question in, unless the call has returned.
func (a *asker) begin() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false
	}
	a.asking.Add(1)
	return true
}

// end ends the questions of a call that has returned, and waits for them.
func (a *asker) end() {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		close(a.stop)
	}
	a.mu.Unlock()
	a.asking.Wait()
}

// InToolCall reports whether ctx is the context of a run's tool call, made
// by the executor: what its server asks or logs can be tied to the run.
func InToolCall(ctx context.Context) bool {
	a, _ := ctx.Value(askerKey{}).(*asker)
	return a != nil
}

// CanAsk reports whether ctx is the context of a tool call made by a run
// whose runtime can put a question to an operator.
func CanAsk(ctx context.Context) bool {
	a, _ := ctx.Value(askerKey{}).(*asker)
	return a != nil && a.s.rt.cfg.Inputs != nil
}

// Ask puts q to the operator of the run whose tool call ctx is the context
// of, and waits for the answer. While it waits, the run is
// waiting_for_input, its question stored (see [InputStore]) for the
// console and "andon answer" to answer — from any process: the answer is
// written to the store, and the segment holding the call reads it there.
//
// The wait is bounded by ctx: the call's budget and the run's deadline
// (the question then expires, and the server is told "cancel"), and the
// run's cancellation (the question is cancelled, the server is told
// "cancel", and the run ends cancelled as any cancelled run does). A
// declined question tells the server "decline". Ask returns ErrNoOperator
// if ctx is not a run's tool call, or the runtime has no InputStore.
func Ask(ctx context.Context, q *Question) (*Answer, error) {
	a, _ := ctx.Value(askerKey{}).(*asker)
	if a == nil || a.s.rt.cfg.Inputs == nil {
		return nil, ErrNoOperator
	}
	return a.ask(ctx, q)
}

func (a *asker) ask(ctx context.Context, q *Question) (*Answer, error) {
	if !a.begin() { // the call has returned: nobody waits for the answer
		return &Answer{Action: ActionCancel}, nil
	}
	defer a.asking.Done()
	s, rt := a.s, a.s.rt
	st := rt.cfg.Inputs
	mode := q.Mode
	if mode == "" {
		mode = InputForm
	}
	now := rt.cfg.Now()
	expires := now.Add(rt.cfg.MaxRunTime)
	if d, ok := ctx.Deadline(); ok {
		expires = d
	}
	req := &InputRequest{ID: newInputID(), RunID: s.run.ID, Server: q.Server, Tool: a.tool, Mode: mode,
		Message: storable(q.Message, maxQuestionText), Schema: q.Schema, URL: storable(q.URL, maxQuestionText),
		Status: InputPending, CreatedAt: now, ExpiresAt: expires}
	// Bookkeeping outlives the call's context: the question must be
	// ended, and the run given back its status, whatever stopped the wait.
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	ok, err := st.RunAwaitInput(bctx, req, s.owner)
	if err != nil {
		return nil, fmt.Errorf("agent: storing the question of run %s: %w", s.run.ID, err)
	}
	if !ok { // cancelled, or no longer ours: nobody will answer
		return &Answer{Action: ActionCancel}, nil
	}
	rt.logger.Info("agent: run waiting for input", "run", s.run.ID, "server", q.Server, "tool", a.tool, "question", req.ID, "mode", string(mode))
	wake := rt.waiters.add(req.ID)
	defer rt.waiters.remove(req.ID)

	final, ans := a.wait(ctx, bctx, req.ID, wake)
	doneAt := rt.cfg.Now()
	back, err := st.RunInputDone(bctx, req.ID, s.owner, final, doneAt.Add(rt.cfg.LeaseDuration))
	if back {
		s.leased.Store(doneAt.UnixNano()) // RunInputDone set the lease: see segment.leased
	}
	if err != nil {
		rt.logger.Warn("agent: ending the wait for input failed", "run", s.run.ID, "question", req.ID, "error", err)
	}
	if !back && ans.Action != ActionCancel {
		// Cancelled (or lost) between the answer and now: the server of
		// a cancelled run gets no answer.
		final, ans = InputCancelled, &Answer{Action: ActionCancel}
	}
	a.record(bctx, req, final, ans)
	return ans, nil
}

// wait waits for question id to be answered or declined, or for ctx to
// end, and returns how it ended and what the server is told.
func (a *asker) wait(ctx, bctx context.Context, id string, wake <-chan struct{}) (InputStatus, *Answer) {
	rt := a.s.rt
	t := time.NewTicker(rt.cfg.InputPollInterval)
	defer t.Stop()
	for {
		got, err := rt.cfg.Inputs.InputGet(bctx, id)
		if err != nil {
			rt.logger.Warn("agent: reading a question failed", "run", a.s.run.ID, "question", id, "error", err)
		} else if got.Status == InputAccepted {
			return InputAccepted, &Answer{Action: ActionAccept, Content: got.Content}
		} else if got.Status == InputDeclined {
			return InputDeclined, &Answer{Action: ActionDecline}
		} else if got.Status != InputPending {
			return got.Status, &Answer{Action: ActionCancel}
		}
		select {
		case <-ctx.Done():
			return ended(ctx), &Answer{Action: ActionCancel}
		case <-a.stop:
			return ended(ctx), &Answer{Action: ActionCancel}
		case <-wake:
		case <-t.C:
		}
	}
}

// deadlineSlack is how close to its deadline a call that returned counts
// as timed out.
const deadlineSlack = 100 * time.Millisecond

// ended says how a wait that ended without a reply ended: expired if the
// call's budget or the run's deadline passed, cancelled otherwise (the run
// was cancelled, the server withdrew the question, the call returned).
func ended(ctx context.Context) InputStatus {
	if errors.Is(context.Cause(ctx), ErrRunCancelled) {
		return InputCancelled
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return InputExpired
	}
	// The call may have ended for its deadline before this context said
	// so (its client's timer, the call's own cancel on return): by the
	// clock, it timed out.
	if d, ok := ctx.Deadline(); ok && time.Until(d) < deadlineSlack {
		return InputExpired
	}
	return InputCancelled
}

// record makes the question and how it ended a step of the run, for its
// timeline: who asked what, and who answered with which fields — never
// the values.
func (a *asker) record(ctx context.Context, q *InputRequest, final InputStatus, ans *Answer) {
	s := a.s
	var text strings.Builder
	fmt.Fprintf(&text, "Server %q asked the operator (%s): %s\n", q.Server, q.Mode, q.Message)
	if q.URL != "" {
		fmt.Fprintf(&text, "URL: %s\n", q.URL)
	}
	outcome := OutcomeOK
	switch final {
	case InputAccepted:
		text.WriteString("Answered")
		if f := answerFields(ans.Content); len(f) > 0 {
			fmt.Fprintf(&text, " (fields: %s)", strings.Join(f, ", "))
		}
	case InputDeclined:
		outcome = OutcomeDenied
		text.WriteString("Declined")
	case InputExpired:
		outcome = OutcomeFailed
		text.WriteString("Expired before an answer")
	default:
		outcome = OutcomeCancelled
		text.WriteString("Cancelled before an answer")
	}
	if got, err := s.rt.cfg.Inputs.InputGet(ctx, q.ID); err == nil && got.By != "" {
		fmt.Fprintf(&text, " by %s", got.By)
	}
	text.WriteString("; the server was told " + ans.Action + ".")
	step := &Step{RunID: s.run.ID, At: q.CreatedAt, Kind: StepInput, Round: a.round, Tool: a.tool,
		Outcome: outcome, Text: truncate(text.String()), Duration: s.rt.cfg.Now().Sub(q.CreatedAt)}
	if err := s.rt.cfg.Store.StepAppend(ctx, s.owner, step); err != nil && !errors.Is(err, ErrLeaseLost) {
		s.rt.logger.Warn("agent: recording a question's step failed", "run", s.run.ID, "question", q.ID, "error", err)
	}
}

// waiters wakes the segments of this process waiting for an answer, when
// the answer is made in this process too.
type waiters struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

func (w *waiters) add(id string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]chan struct{}{}
	}
	ch := make(chan struct{}, 1)
	w.m[id] = ch
	return ch
}

func (w *waiters) remove(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, id)
}

func (w *waiters) wake(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ch := w.m[id]; ch != nil {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func newInputID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "q_" + hex.EncodeToString(b)
}

// storable makes untrusted text fit to store: valid UTF-8, no NUL (which
// PostgreSQL's text refuses), at most n bytes.
func storable(text string, n int) string {
	return truncateTo(strings.ReplaceAll(strings.ToValidUTF8(text, "\uFFFD"), "\x00", ""), n)
}

// truncateTo cuts text to n bytes on a character boundary.
func truncateTo(text string, n int) string {
	if len(text) <= n {
		return text
	}
	for n > 0 && (text[n]&0xC0) == 0x80 {
		n--
	}
	return text[:n] + "…"
}
