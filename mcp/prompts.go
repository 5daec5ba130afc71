package mcp

import (
	"context"
	"encoding/json"
	"iter"
)

// Prompt is a prompt template a server offers (prompts/list).
type Prompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
	Meta        json.RawMessage  `json:"_meta,omitempty"`
}

// PromptArgument is one argument a prompt accepts.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// PromptMessage is one message of a rendered prompt.
type PromptMessage struct {
	Role    string  `json:"role"` // "user" or "assistant"
	Content Content `json:"content"`
}

// GetPromptResult is a prompt rendered with its arguments (prompts/get).
type GetPromptResult struct {
	Description string          `json:"description,omitempty"`
	Messages    []PromptMessage `json:"messages"`
	Meta        json.RawMessage `json:"_meta,omitempty"`
}

// ListPrompts returns the server's prompts as an iterator, paginated as
// [Client.ListResources] is.
func (c *Client) ListPrompts(ctx context.Context, opts *CallOptions) iter.Seq2[Prompt, error] {
	return pages[Prompt](c, ctx, "prompts/list", "prompts", opts)
}

// GetPrompt renders the prompt name with args. It is stopped as
// [Client.CallTool] is. An unknown prompt or a missing required argument is
// the server's [*RPCError] (usually [CodeInvalidParams]).
func (c *Client) GetPrompt(ctx context.Context, name string, args map[string]string, opts *CallOptions) (*GetPromptResult, error) {
	var res struct {
		resultKind
		GetPromptResult
	}
	if err := c.request(ctx, "prompts/get", &getPromptParams{Name: name, Arguments: args}, opts, false, &res); err != nil {
		return nil, err
	}
	if res.Messages == nil {
		res.Messages = []PromptMessage{}
	}
	return &res.GetPromptResult, nil
}

type getPromptParams struct {
	paramsBase
	Name      string            `json:"name"`
	Arguments map[string]string `json:"arguments,omitempty"`
}
