package agent

import (
	"context"
	"encoding/json"
)

// Tool is something a run can call. Tools imported from MCP servers come
// from package catalogue.
type Tool interface {
	// Spec describes the tool to the model.
	Spec() ToolSpec
	// Effect classifies what the tool does to the world.
	Effect() Effect
	// RequiresApproval reports whether an operator must approve each call
	// before it runs.
	RequiresApproval() bool
	// Call runs the tool. ctx is cancelled, with cause ErrRunCancelled,
	// when the run is cancelled; the tool must then stop and return a
	// result with OutcomeCancelled. An error means the call could not be
	// made or completed (OutcomeFailed); a tool that ran and failed returns
	// a result with OutcomeError.
	Call(ctx context.Context, args json.RawMessage) (*ToolResult, error)
}

// ToolSpec describes a tool to a model.
type ToolSpec struct {
	Name        string
	Description string
	InputSchema json.RawMessage
}

// ToolResult is what a tool call produced.
type ToolResult struct {
	Outcome Outcome
	// Text is the result as the model will read it.
	Text string
}

// Tools is the set of tools a run may call.
type Tools interface {
	// Tool returns the tool called name, or nil.
	Tool(ctx context.Context, name string) (Tool, error)
	// List returns every tool, for the model.
	List(ctx context.Context) ([]Tool, error)
}
