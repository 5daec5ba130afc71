package mcptest

import (
	"encoding/json"
	"time"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
)

// ElicitAnswered: the elicit tool got the client's answer to its question
// (Tool, ID); Params is the ElicitResult as the client sent it ({"action":
// "accept"|"decline"|"cancel", "content": …}) — in an elicitation/create
// response on handshake-era revisions, in the retry's inputResponses on
// 2026-07-28. An answer that arrives after its tool call was cancelled is
// recorded too.
const ElicitAnswered = "elicit_answered"

// elicitGrace is how long the elicit tool, cancelled, still listens for
// the answer to its question.
const elicitGrace = 10 * time.Second

// elicitState is the requestState of the elicit tool's input_required.
const elicitState = "mcptest-elicit-1"

// defaultElicitSchema is what the elicit tool asks for when its arguments
// name no schema: a name, required.
const defaultElicitSchema = `{"type":"object","properties":{"name":{"type":"string","title":"Name"}},"required":["name"]}`

// elicitTool describes the elicit tool.
func elicitTool() map[string]any {
	return map[string]any{"name": "elicit",
		"description": "Asks the user a question (elicitation) and returns the answer.",
		"inputSchema": json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"},"log":{"type":"string"},"schema":{"type":"object"},"mode":{"type":"string","enum":["form","url"]},"url":{"type":"string"}}}`)}
}

// elicitParams are the params of the elicit tool's elicitation/create.
func (t *toolCall) elicitParams() json.RawMessage {
	a := t.args
	p := map[string]any{"message": cmpOr(a.Message, "What is your name?")}
	if a.Mode == "url" {
		p["mode"], p["url"], p["elicitationId"] = "url", cmpOr(a.URL, "https://example.com/mcptest/connect"), "mcptest-elicitation-"+t.key
	} else {
		schema := a.Schema
		if len(schema) == 0 {
			schema = json.RawMessage(defaultElicitSchema)
		}
		p["requestedSchema"] = schema
	}
	return mustJSON(p)
}

// elicit asks the client a question — by an elicitation/create request on
// handshake-era revisions, by an input_required round trip on 2026-07-28 —
// and answers with what it was told: "elicit: ACTION CONTENT". With log, it
// first sends that text as a log message (notifications/message, level
// info, logger "mcptest"), unless logging/setLevel filters info out.
func (t *toolCall) elicit() {
	if t.args.Log != "" && len(t.base.InputResponses) == 0 && t.c.logs("info", t.base.Meta, t.modern) {
		params := mustJSON(map[string]any{"level": "info", "logger": "mcptest", "data": t.args.Log})
		t.out.write(&jsonrpc.Message{Method: "notifications/message", Params: params})
	}
	if t.modern {
		answer, ok := t.base.InputResponses["elicit"]
		if !ok {
			t.finish(map[string]any{
				"resultType":    "input_required",
				"inputRequests": map[string]any{"elicit": map[string]any{"method": "elicitation/create", "params": t.elicitParams()}},
				"requestState":  elicitState,
			})
			return
		}
		t.c.s.rec.add(Record{Kind: ElicitAnswered, Tool: t.name, ID: t.key, Params: answer})
		t.finish(t.text(elicitText(answer)))
		return
	}
	_, ch := t.c.request(t.out, "elicitation/create", t.elicitParams())
	select {
	case resp := <-ch:
		t.elicited(resp)
		if resp.Error != nil {
			res := t.text("elicitation/create failed: " + resp.Error.Message)
			res["isError"] = true
			t.finish(res)
			return
		}
		t.finish(t.text(elicitText(resp.Result)))
	case <-t.ctx.Done():
		t.cancelled()
		// The client may still answer the question: record what it says,
		// if it does so soon.
		grace := time.NewTimer(elicitGrace)
		defer grace.Stop()
		select {
		case resp := <-ch:
			t.elicited(resp)
		case <-grace.C:
		case <-t.c.s.done:
		}
	}
}

// elicited records the client's response to the elicit tool's question.
func (t *toolCall) elicited(resp *jsonrpc.Message) {
	params := resp.Result
	if resp.Error != nil {
		params = mustJSON(map[string]any{"error": resp.Error})
	}
	t.c.s.rec.add(Record{Kind: ElicitAnswered, Tool: t.name, ID: t.key, Params: params})
}

func elicitText(result json.RawMessage) string {
	var r struct {
		Action  string          `json:"action"`
		Content json.RawMessage `json:"content"`
	}
	json.Unmarshal(result, &r)
	text := "elicit: " + r.Action
	if len(r.Content) > 0 {
		text += " " + string(r.Content)
	}
	return text
}
