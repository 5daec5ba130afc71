package mcptest

import (
	"encoding/json"
	"time"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
)

// question is what a tool asks of the client: the method of a
// server→client request (handshake era) or of an input request in an
// input_required result (2026-07-28), its params, and the key and prefix
// under which the answer is reported ("roots: {…}").
type question struct {
	key    string // the input request's key, and the answer's prefix
	method string
	params json.RawMessage
}

// rootsQuestion is the ask tool's: the client's roots.
var rootsQuestion = question{key: "roots", method: "roots/list", params: json.RawMessage(`{}`)}

// elicitQuestion asks the client's user for a name, in form mode.
func elicitQuestion(message string) question {
	return question{key: "elicitation", method: "elicitation/create", params: mustJSON(map[string]any{
		"mode":    "form",
		"message": message,
		"requestedSchema": map[string]any{
			"type":       "object",
			"properties": map[string]any{"name": map[string]any{"type": "string", "description": "Your name"}},
			"required":   []string{"name"},
		},
	})}
}

// sampleQuestion asks the client's model for one message.
func sampleQuestion(text string) question {
	return question{key: "sampling", method: "sampling/createMessage", params: mustJSON(map[string]any{
		"messages":  []map[string]any{{"role": "user", "content": map[string]any{"type": "text", "text": text}}},
		"maxTokens": 100,
	})}
}

// askClient asks q of the client — by a server→client request on
// handshake-era revisions, by an input_required round trip on 2026-07-28
// (after first; the second round answers after then) — and answers with
// "KEY: ANSWER", the client's answer as JSON. A refused request is a tool
// error "METHOD failed: MESSAGE". Both waits honour cancellation; a call
// cancelled while the client is answering cancels the question too
// (notifications/cancelled naming it, handshake era).
func (t *toolCall) askClient(q question, first, then time.Duration) {
	if t.modern {
		if answer, ok := t.base.InputResponses[q.key]; ok {
			if !t.sleep(then) {
				t.cancelled()
				return
			}
			if t.base.RequestState != askState {
				res := t.text("requestState was not echoed")
				res["isError"] = true
				t.finish(res)
				return
			}
			t.finish(t.text(q.key + ": " + string(answer)))
			return
		}
		if !t.sleep(first) {
			t.cancelled()
			return
		}
		t.finish(map[string]any{
			"resultType":    "input_required",
			"inputRequests": map[string]any{q.key: map[string]any{"method": q.method, "params": q.params}},
			"requestState":  askState,
		})
		return
	}
	id, ch := t.c.request(t.out, q.method, q.params)
	select {
	case resp := <-ch:
		if resp.Error != nil {
			res := t.text(q.method + " failed: " + resp.Error.Message)
			res["isError"] = true
			t.finish(res)
			return
		}
		t.finish(t.text(q.key + ": " + string(resp.Result)))
	case <-t.ctx.Done():
		// The call that asked was cancelled: so is the question, as a
		// server tells a client it no longer needs an answer.
		t.c.mu.Lock()
		delete(t.c.pending, idKey(id))
		t.c.mu.Unlock()
		t.out.write(&jsonrpc.Message{Method: "notifications/cancelled", Params: mustJSON(map[string]any{"requestId": id, "reason": "the tool call that asked was cancelled"})})
		t.cancelled()
	}
}
