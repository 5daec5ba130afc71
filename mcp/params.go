package mcp

import (
	"encoding/json"
	"runtime/debug"
)

// requestParams is the params object of a request the client sends. Every
// one embeds paramsBase, which carries what the protocol adds to any request.
type requestParams interface {
	base() *paramsBase
}

// paramsBase holds the fields common to every request's params: the _meta
// envelope (2026-07-28) or progress token, and the inputs of a retried
// multi-round-trip request.
type paramsBase struct {
	Meta           *requestMeta               `json:"_meta,omitempty"`
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
	// RequestState is echoed byte for byte, as the spec requires.
	RequestState json.RawMessage `json:"requestState,omitempty"`
}

func (p *paramsBase) base() *paramsBase { return p }

// requestMeta is params._meta.
type requestMeta struct {
	ProtocolVersion    string          `json:"io.modelcontextprotocol/protocolVersion,omitempty"`
	ClientCapabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities,omitempty"`
	ClientInfo         *Implementation `json:"io.modelcontextprotocol/clientInfo,omitempty"`
	ProgressToken      string          `json:"progressToken,omitempty"`
	// LogLevel asks a 2026-07-28 server for log messages of this level and
	// above (SetLoggingLevel); without it the server sends none.
	LogLevel LoggingLevel `json:"io.modelcontextprotocol/logLevel,omitempty"`
	// traceMeta is the W3C trace context of the request's span
	// (SEP-414), when the client traces: a pointer, so that a client that
	// does not trace carries one word for it, not two strings.
	*traceMeta
}

// traceMeta holds the W3C trace context fields of a request's _meta.
type traceMeta struct {
	Traceparent string `json:"traceparent,omitempty"`
	Tracestate  string `json:"tracestate,omitempty"`
}

// requestMeta returns the _meta for a request: the per-request envelope on
// 2026-07-28, and the progress token if there is one. Nil when empty.
func (c *Client) requestMeta(progressToken string) *requestMeta {
	if !c.rev.metaEnvelope {
		if progressToken == "" {
			return nil
		}
		return &requestMeta{ProgressToken: progressToken}
	}
	return &requestMeta{
		ProtocolVersion:    c.rev.name,
		ClientCapabilities: c.modernCaps,
		ClientInfo:         &c.opts.ClientInfo,
		ProgressToken:      progressToken,
		LogLevel:           c.requestLogLevel(),
	}
}

// capabilities returns the client's capabilities as JSON: only what it has
// handlers for.
func (c *Client) capabilities() json.RawMessage {
	caps := map[string]any{}
	if c.opts.Roots != nil {
		// listChanged: SetRoots sends notifications/roots/list_changed.
		caps["roots"] = map[string]any{"listChanged": true}
	}
	if c.opts.SamplingHandler != nil {
		caps["sampling"] = map[string]any{}
	}
	if c.opts.ElicitationHandler != nil {
		caps["elicitation"] = map[string]any{}
	}
	raw, _ := json.Marshal(caps)
	return raw
}

type emptyParams struct {
	paramsBase
}

type listParams struct {
	paramsBase
	Cursor string `json:"cursor,omitempty"`
}

type callToolParams struct {
	paramsBase
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Task makes the call a task (2025-11-25).
	Task *taskMetadata `json:"task,omitempty"`
}

type initializeParams struct {
	paramsBase
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
	ClientInfo      Implementation  `json:"clientInfo"`
}

type cancelledParams struct {
	RequestID int64        `json:"requestId"`
	Reason    string       `json:"reason,omitempty"`
	Meta      *requestMeta `json:"_meta,omitempty"`
}

// moduleVersion is andon's version as the Go toolchain recorded it.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/andonhq/andon" {
				return d.Version
			}
		}
		if bi.Main.Path == "github.com/andonhq/andon" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			return bi.Main.Version
		}
	}
	return "devel"
}
