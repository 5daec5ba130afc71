package mcp

import (
	"context"
	"fmt"
	"slices"
)

// CompletionRef names what an argument being completed belongs to: a prompt
// ([PromptRef]) or a resource template ([ResourceRef]).
type CompletionRef struct {
	Type string `json:"type"` // "ref/prompt" or "ref/resource"
	Name string `json:"name,omitempty"`
	URI  string `json:"uri,omitempty"`
}

// PromptRef refers to the prompt name, for [Client.Complete].
func PromptRef(name string) CompletionRef { return CompletionRef{Type: "ref/prompt", Name: name} }

// ResourceRef refers to the resource template uriTemplate, for
// [Client.Complete].
func ResourceRef(uriTemplate string) CompletionRef {
	return CompletionRef{Type: "ref/resource", URI: uriTemplate}
}

// CompleteRequest asks for completions of one argument's value.
type CompleteRequest struct {
	Ref      CompletionRef
	Argument string // the argument's name
	Value    string // what has been typed so far
	// Context holds arguments already resolved, which the server may use
	// (2025-06-18 on). Nil sends none.
	Context map[string]string
}

// Completion is a server's suggestions for an argument's value.
type Completion struct {
	Values  []string `json:"values"`
	Total   int      `json:"total,omitempty"` // zero when not given
	HasMore bool     `json:"hasMore,omitempty"`
}

// Complete asks the server to complete an argument (completion/complete).
// It is stopped as [Client.CallTool] is.
func (c *Client) Complete(ctx context.Context, req CompleteRequest, opts *CallOptions) (*Completion, error) {
	params := &completeParams{Ref: req.Ref}
	params.Argument.Name, params.Argument.Value = req.Argument, req.Value
	if req.Context != nil {
		params.Context = &completeContext{Arguments: req.Context}
	}
	var res struct {
		resultKind
		Completion Completion `json:"completion"`
	}
	if err := c.request(ctx, "completion/complete", params, opts, false, &res); err != nil {
		return nil, err
	}
	if res.Completion.Values == nil {
		res.Completion.Values = []string{}
	}
	return &res.Completion, nil
}

type completeParams struct {
	paramsBase
	Ref      CompletionRef `json:"ref"`
	Argument struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"argument"`
	Context *completeContext `json:"context,omitempty"`
}

type completeContext struct {
	Arguments map[string]string `json:"arguments"`
}

// LoggingLevel is a server log level, from least to most severe: "debug",
// "info", "notice", "warning", "error", "critical", "alert", "emergency".
type LoggingLevel string

// SetLoggingLevel asks the server to send log messages (notifications/message)
// of level and above; they reach [ClientOptions].Logger. On handshake-era
// revisions it sends logging/setLevel, stopped as [Client.CallTool] is. On
// 2026-07-28, which has no such method (a stateless server keeps no level),
// it sends nothing: every later request carries level in its _meta
// (io.modelcontextprotocol/logLevel), so that the server may log while it
// serves that request — progress and log messages of a request travel with
// it. An unknown level is an error there; a handshake-era server refuses
// it itself.
func (c *Client) SetLoggingLevel(ctx context.Context, level LoggingLevel, opts *CallOptions) error {
	if c.rev.metaEnvelope {
		if !slices.Contains(loggingLevels, level) {
			return fmt.Errorf("mcp: unknown logging level %q (want one of %v)", level, loggingLevels)
		}
		if ctx.Err() != nil {
			return interruption("logging/setLevel", ctx)
		}
		c.logLevel.Store(&level)
		return nil
	}
	return c.request(ctx, "logging/setLevel", &setLevelParams{Level: level}, opts, false, &resultKind{})
}

// loggingLevels are the protocol's log levels, least severe first.
var loggingLevels = []LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// requestLogLevel is the _meta logLevel of a 2026-07-28 request: empty until
// SetLoggingLevel.
func (c *Client) requestLogLevel() LoggingLevel {
	if l := c.logLevel.Load(); l != nil {
		return *l
	}
	return ""
}

type setLevelParams struct {
	paramsBase
	Level LoggingLevel `json:"level"`
}
