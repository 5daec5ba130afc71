package mcptest

import (
	"encoding/json"
	"fmt"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
)

// Prompts:
//
//   - greet {name (required), style}: one user message greeting name,
//     "in the style of" style when given.
//   - plain: one assistant message, no arguments.
//
// An unknown prompt or a missing required argument is -32602.

var promptList = []map[string]any{
	{"name": "greet", "description": "Greets someone.", "arguments": []map[string]any{
		{"name": "name", "description": "Who to greet.", "required": true},
		{"name": "style", "description": "How."},
	}},
	{"name": "plain", "description": "A prompt without arguments."},
}

func (c *serverConn) getPrompt(m *jsonrpc.Message, modern bool, out outbox) {
	var p struct {
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "params: " + err.Error()})
		return
	}
	var text, role string
	switch p.Name {
	case "greet":
		name, ok := p.Arguments["name"]
		if !ok {
			reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "greet: missing required argument name"})
			return
		}
		role, text = "user", "Hello, "+name+"!"
		if style := p.Arguments["style"]; style != "" {
			text = fmt.Sprintf("Hello, %s! (in the style of %s)", name, style)
		}
	case "plain":
		role, text = "assistant", "a plain prompt"
	default:
		reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Unknown prompt: " + p.Name})
		return
	}
	res := map[string]any{
		"description": "mcptest prompt " + p.Name,
		"messages":    []map[string]any{{"role": role, "content": map[string]any{"type": "text", "text": text}}},
	}
	if modern {
		res["resultType"] = "complete"
	}
	reply(out, m.ID, res, nil)
}
