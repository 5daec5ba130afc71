package catalogue

import (
	"encoding/json"
	"testing"
)

// The tool's input schema is part of its identity, as the server gives it;
// the order of its keys is not.
func TestIdentityFollowsTheToolsSchema(t *testing.T) {
	s := &Server{Name: "gated", Command: []string{"deploy-server"}}
	a := identity(s, "deploy", json.RawMessage(`{"type":"object","properties":{"env":{"type":"string"}}}`))
	reordered := identity(s, "deploy", json.RawMessage(`{"properties":{"env":{"type":"string"}},"type":"object"}`))
	widened := identity(s, "deploy", json.RawMessage(`{"type":"object","properties":{"env":{"type":"string"},"force":{"type":"boolean"}}}`))
	other := identity(s, "destroy", json.RawMessage(`{"type":"object","properties":{"env":{"type":"string"}}}`))
	if a != reordered {
		t.Error("reordering the schema's keys changed the identity")
	}
	if a == widened {
		t.Error("a schema with another property kept the identity")
	}
	if a == other {
		t.Error("another tool of the server has the same identity")
	}
}
