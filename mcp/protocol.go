package mcp

import (
	"encoding/json"
	"slices"
)

// Implementation names a client or server program.
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

// ServerInfo is what the client learned about the server when it connected.
type ServerInfo struct {
	// ProtocolVersion is the negotiated revision, e.g. "2026-07-28".
	ProtocolVersion string
	// Implementation is the server's self-description.
	Implementation Implementation
	// Capabilities are the server's capabilities, as it sent them.
	Capabilities json.RawMessage
	// Instructions are the server's optional hints for the model.
	Instructions string
}

// Tool is a tool a server offers.
type Tool struct {
	Name         string           `json:"name"`
	Title        string           `json:"title,omitempty"`
	Description  string           `json:"description,omitempty"`
	InputSchema  json.RawMessage  `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  *ToolAnnotations `json:"annotations,omitempty"`
	Meta         json.RawMessage  `json:"_meta,omitempty"`

	// TaskSupport is the tool's execution.taskSupport (2025-11-25 on):
	// whether it may or must run as a task. Decoding sets it to
	// TaskForbidden when the server did not say.
	TaskSupport TaskSupport `json:"-"`

	// Raw is the Tool object as the server sent it, with the fields this
	// type does not model (icons, …). Nil for a Tool that was not decoded
	// from JSON.
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON decodes a Tool and keeps the object as sent in Raw.
func (t *Tool) UnmarshalJSON(data []byte) error {
	type plain Tool // without this method
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*t = Tool(p)
	t.Raw = slices.Clone(json.RawMessage(data)) // data is the decoder's
	var exec struct {
		Execution struct {
			TaskSupport TaskSupport `json:"taskSupport"`
		} `json:"execution"`
	}
	_ = json.Unmarshal(data, &exec) // a malformed execution is no task support
	switch exec.Execution.TaskSupport {
	case TaskOptional, TaskRequired:
		t.TaskSupport = exec.Execution.TaskSupport
	default:
		t.TaskSupport = TaskForbidden
	}
	return nil
}

// ToolAnnotations are a server's hints about a tool's behaviour. They are
// claims, not guarantees: trust them only as far as you trust the server.
// A nil field means the hint was not given; the protocol's defaults are
// read-only false, destructive true, idempotent false, open-world true.
type ToolAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Content is one content block of a tool result. Type says which fields are
// set: "text" (Text), "image" and "audio" (Data, MIMEType), "resource_link"
// (URI, Name, MIMEType) and "resource" (Resource).
type Content struct {
	Type     string          `json:"type"`
	Text     string          `json:"text,omitempty"`
	Data     string          `json:"data,omitempty"`
	MIMEType string          `json:"mimeType,omitempty"`
	URI      string          `json:"uri,omitempty"`
	Name     string          `json:"name,omitempty"`
	Resource json.RawMessage `json:"resource,omitempty"`
}

// CallToolResult is the outcome of a tool call that the server completed.
// A tool that failed sets IsError; that is a result, not a Go error.
type CallToolResult struct {
	Content           []Content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	Meta              json.RawMessage `json:"_meta,omitempty"`
}

// Text returns the text of the result's text blocks, one per line.
func (r *CallToolResult) Text() string {
	var out []byte
	for _, c := range r.Content {
		if c.Type != "text" {
			continue
		}
		if len(out) > 0 {
			out = append(out, '\n')
		}
		out = append(out, c.Text...)
	}
	return string(out)
}

// Progress is a progress notification for a call in flight.
type Progress struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"` // zero when unknown
	Message  string  `json:"message,omitempty"`
}

// Root is a filesystem root the client offers the server (roots/list).
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}
