package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/token"
)

// A server's questions to the operator during a run (MCP elicitation; see
// agent.Ask). A run waiting for input shows its question in its detail
// (GET /v1/runs/{id}: question); these routes reply to it:
//
//	POST /v1/runs/{id}/answer   operator  {"question", "content": {…}}: answer it
//	POST /v1/runs/{id}/decline  operator  {"question"}: refuse to answer
//
// question, if given, names the question the operator was shown: the reply
// lands only if the run still waits on that one, and is a conflict
// otherwise. An answer that does not fit the question's requested schema is
// a bad request saying which fields fail, never their values; a run that
// does not wait for input is a conflict.

// Question is the question a run waiting for input waits on. Message is the
// server's text and URL the address a url question asks the operator to
// visit: both are untrusted, shown as text, never opened by andon.
type Question struct {
	ID      string          `json:"id"`
	Server  string          `json:"server"`
	Tool    string          `json:"tool"`
	Mode    string          `json:"mode"` // "form" or "url"
	Message string          `json:"message"`
	Schema  json.RawMessage `json:"schema,omitempty"`
	URL     string          `json:"url,omitempty"`
	// ExpiresAt is when the call that asks gives up waiting.
	ExpiresAt time.Time `json:"expires_at"`
	CreatedAt time.Time `json:"created_at"`
}

// Reply is the body of an answer or a decline.
type Reply struct {
	Question string          `json:"question,omitempty"`
	Content  json.RawMessage `json:"content,omitempty"`
}

func toQuestion(q *agent.InputRequest) *Question {
	return &Question{ID: q.ID, Server: q.Server, Tool: q.Tool, Mode: string(q.Mode), Message: q.Message,
		Schema: q.Schema, URL: q.URL, ExpiresAt: q.ExpiresAt, CreatedAt: q.CreatedAt}
}

func (s *server) inputRoutes(mux *http.ServeMux) {
	s.route(mux, "POST /v1/runs/{id}/answer", token.RoleOperator, s.reply(false))
	s.route(mux, "POST /v1/runs/{id}/decline", token.RoleOperator, s.reply(true))
}

// question returns the question run waits on, or nil: none, or no
// InputStore. A store error is logged and reads as none: the rest of the
// run's detail is still worth showing.
func (s *server) question(ctx context.Context, run *agent.Run) *Question {
	if s.cfg.Inputs == nil || run.Status != agent.StatusWaitingForInput {
		return nil
	}
	q, err := s.cfg.Inputs.InputPending(ctx, run.ID)
	if err != nil {
		s.cfg.Logger.Warn("api: reading a run's question failed", "run", run.ID, "error", err)
		return nil
	}
	if q == nil {
		return nil
	}
	return toQuestion(q)
}

func (s *server) reply(decline bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		var body Reply
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
		dec.DisallowUnknownFields()
		err := dec.Decode(&body)
		if err == nil && dec.More() {
			err = errTrailingData
		}
		if err != nil && !errors.Is(err, io.EOF) {
			writeError(w, http.StatusBadRequest, "bad_request", "the body is not a reply: "+decodeProblem(err))
			return
		}
		if decline && len(body.Content) > 0 {
			writeError(w, http.StatusBadRequest, "bad_request", "a decline carries no content")
			return
		}
		err = s.cfg.Runtime.Reply(r.Context(), s.actor(r), agent.Reply{RunID: id, Question: body.Question, Decline: decline, Content: body.Content})
		switch {
		case errors.Is(err, agent.ErrInvalidAnswer):
			writeError(w, http.StatusBadRequest, "bad_request", err.Error()) // names fields and keywords, never values
			return
		case errors.Is(err, agent.ErrNotWaitingForInput) && body.Question != "":
			writeError(w, http.StatusConflict, "conflict", "the run is not waiting on the question named: look at it again")
			return
		case errors.Is(err, agent.ErrNotWaitingForInput):
			writeError(w, http.StatusConflict, "conflict", "the run is not waiting for input")
			return
		case err != nil:
			s.failRun(w, r, err)
			return
		}
		s.writeChangedRun(w, r, id)
	}
}
