package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/andonhq/andon/mcp"
)

// elicitParams is the part of elicitation/create's params the handler reads.
type elicitParams struct {
	Message         string `json:"message"`
	Mode            string `json:"mode"`
	RequestedSchema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	} `json:"requestedSchema"`
}

// elicitResult is elicitation/create's result.
type elicitResult struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// acceptWithDefaults returns an ElicitationHandler that plays a user who
// accepts every form elicitation without typing anything: each field of the
// requested schema that has a default gets it (SEP-1034: a client should
// pre-fill defaults), then answers overrides the fields it names. A URL-mode
// elicitation, which has no form to fill, is declined.
func acceptWithDefaults(answers map[string]any) mcp.RequestHandler {
	return func(_ context.Context, raw json.RawMessage) (any, error) {
		var p elicitParams
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, &mcp.RPCError{Code: mcp.CodeInvalidParams, Message: fmt.Sprintf("elicitation/create: malformed params: %v", err)}
		}
		if p.Mode != "" && p.Mode != "form" {
			return elicitResult{Action: "decline"}, nil
		}
		content, err := schemaDefaults(p.RequestedSchema.Properties)
		if err != nil {
			return nil, &mcp.RPCError{Code: mcp.CodeInvalidParams, Message: "elicitation/create: " + err.Error()}
		}
		for k, v := range answers {
			content[k] = v
		}
		return elicitResult{Action: "accept", Content: content}, nil
	}
}

// schemaDefaults returns the default of every property that declares one.
// Elicitation schemas are flat: each property is a primitive (string,
// number, integer, boolean, or a string enum), so a default is used as is,
// but only when it has the property's type: a default of the wrong type
// would make the answer invalid, so it is left out.
func schemaDefaults(props map[string]json.RawMessage) (map[string]any, error) {
	content := map[string]any{}
	for name, raw := range props {
		var prop struct {
			Type    string          `json:"type"`
			Default json.RawMessage `json:"default"`
		}
		if err := json.Unmarshal(raw, &prop); err != nil {
			return nil, fmt.Errorf("property %q: %v", name, err)
		}
		if len(prop.Default) == 0 || string(prop.Default) == "null" {
			continue
		}
		var v any
		if err := json.Unmarshal(prop.Default, &v); err != nil {
			return nil, fmt.Errorf("property %q: default: %v", name, err)
		}
		if fitsType(v, prop.Type) {
			content[name] = v
		}
	}
	return content, nil
}

// fitsType reports whether the decoded JSON value v is of the JSON Schema
// type typ; an empty typ accepts anything.
func fitsType(v any, typ string) bool {
	switch typ {
	case "":
		return true
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == float64(int64(f))
	case "array":
		_, ok := v.([]any)
		return ok
	}
	return false
}
