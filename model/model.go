// Package model is the seam between andon's runtime and the language
// models that drive runs. A [Model] takes the conversation so far and the
// tools on offer, and answers with text and the tool calls it wants made.
// Implementations live in subpackages: model/script (deterministic, offline,
// for demos and tests) and model/openai (any OpenAI-compatible
// chat-completions API, with tool calling).
package model

import (
	"context"
	"encoding/json"
)

// Model produces the next turn of a conversation. It must honour ctx: a
// cancelled run cancels its model call too.
type Model interface {
	Complete(ctx context.Context, req *Request) (*Response, error)
}

// Role says who spoke a message.
type Role string

// Roles of a conversation.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool" // the result of a tool call
)

// Message is one turn of a conversation.
type Message struct {
	Role Role   `json:"role"`
	Text string `json:"text,omitempty"`
	// ToolCalls are the calls an assistant message asked for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID names the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// ToolCall is a model's request to run a tool.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// ToolSpec describes a tool the model may call.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
}

// Request is what a model is asked.
type Request struct {
	Messages []Message
	Tools    []ToolSpec
}

// Response is a model's turn: text, tool calls, or both. No tool calls
// means the model is done.
type Response struct {
	Text      string
	ToolCalls []ToolCall
}
