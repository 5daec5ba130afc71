package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/andonhq/andon/audit"
)

// Reply is an operator's reply to the question a run waits on.
type Reply struct {
	RunID string
	// Question, if set, names the question the operator was shown: the
	// reply is refused with ErrNotWaitingForInput unless the run waits on
	// exactly that one.
	Question string
	// Decline refuses to answer: the server is told "decline".
	Decline bool
	// Content is the answer to a form question, a JSON object that must
	// fit the question's requested schema. A url question takes none:
	// accepting it says the operator has been to the URL.
	Content json.RawMessage
}

// Answer answers the question a run waits on (see [Ask]) with r.Content.
func (rt *Runtime) Answer(ctx context.Context, actor Actor, r Reply) error {
	r.Decline = false
	return rt.Reply(ctx, actor, r)
}

// Decline refuses to answer the question run runID waits on.
func (rt *Runtime) Decline(ctx context.Context, actor Actor, runID string) error {
	return rt.Reply(ctx, actor, Reply{RunID: runID, Decline: true})
}

// Reply answers or declines the question a run waits on. actor must own
// the run or be an admin. An answer is bounded (MaxJSONDepth,
// MaxAnswerBytes: a [*LimitError]), then validated against the question's
// requested schema ([ErrInvalidAnswer], naming the fields that fail, never
// their values). The reply is audited before it is stored — the
// run, who, the question, and the names of the fields given, never their
// values: an answer may hold a secret, and which fields are secret is the
// server's to say, so no value is audited at all. It is stored for the
// segment holding the call, in whichever process, to pick up; of two
// replies, one wins, and the other gets ErrNotWaitingForInput.
func (rt *Runtime) Reply(ctx context.Context, actor Actor, r Reply) error {
	st := rt.cfg.Inputs
	if st == nil {
		return fmt.Errorf("%w: run %s (this runtime takes no answers)", ErrNotWaitingForInput, r.RunID)
	}
	run, err := rt.cfg.Store.RunGet(ctx, r.RunID)
	if err != nil {
		return err
	}
	if !actor.mayAct(run) {
		return fmt.Errorf("%w: %s may not answer for run %s", ErrForbidden, actor.ID, r.RunID)
	}
	if run.Status.Terminal() {
		return fmt.Errorf("%w: run %s", ErrFinished, r.RunID)
	}
	q, err := st.InputPending(ctx, r.RunID)
	if err != nil {
		return fmt.Errorf("agent: reading the question of run %s: %w", r.RunID, err)
	}
	if q == nil || (r.Question != "" && r.Question != q.ID) {
		return fmt.Errorf("%w: run %s", ErrNotWaitingForInput, r.RunID)
	}
	status, content := InputDeclined, json.RawMessage(nil)
	if !r.Decline {
		status = InputAccepted
		switch q.Mode {
		case InputURL:
			if len(strings.TrimSpace(string(r.Content))) > 0 && strings.TrimSpace(string(r.Content)) != "{}" {
				return fmt.Errorf("%w: a url question takes no values", ErrInvalidAnswer)
			}
		default:
			if content, err = answerJSON(r.Content); err != nil {
				return err
			}
			if err := validateAnswer(q.Schema, content); err != nil {
				return err
			}
		}
	}
	at := rt.cfg.Now()
	// The audit row comes first: a reply that is not audited is not made.
	if err := rt.audit(ctx, auditReply(q, actor, status, content, at)); err != nil {
		return fmt.Errorf("agent: auditing the reply to run %s: %w", r.RunID, err)
	}
	ok, err := st.InputAnswer(ctx, q.ID, status, content, actor.ID, at)
	if err != nil {
		return fmt.Errorf("agent: storing the reply to run %s: %w", r.RunID, err)
	}
	if !ok {
		return fmt.Errorf("%w: run %s (answered or ended meanwhile)", ErrNotWaitingForInput, r.RunID)
	}
	rt.waiters.wake(q.ID)
	rt.logger.Info("agent: question replied", "run", r.RunID, "question", q.ID, "status", string(status), "by", actor.ID)
	return nil
}

// The reasons of reply rows: fixed literals.
const (
	auditAnswered = "answered"
	auditDeclined = "declined"
)

// auditReply is the audit row of a reply: the run, who, the question and
// the names of the fields given — never a value.
func auditReply(q *InputRequest, actor Actor, status InputStatus, content json.RawMessage, at time.Time) audit.Entry {
	path := fmt.Sprintf("%s %s question=%s", q.Server, q.Tool, q.ID)
	if f := answerFields(content); len(f) > 0 {
		path += " fields=" + strings.Join(f, ",")
	}
	e := audit.Entry{Time: at, Action: audit.ActionInputAnswered, RunID: q.RunID, Purpose: "by " + actor.ID, Path: path, OK: true, Reason: auditAnswered}
	if status == InputDeclined {
		e.Action, e.OK, e.Reason = audit.ActionInputDeclined, false, auditDeclined
	}
	return e
}
