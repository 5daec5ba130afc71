package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// environ returns a getenv over vars.
func environ(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestRunUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string // in stderr
	}{
		{"no URL", nil, map[string]string{envScenario: "initialize"}, "usage:"},
		{"empty URL", []string{""}, map[string]string{envScenario: "initialize"}, "usage:"},
		{"no scenario", []string{"http://127.0.0.1:1/mcp"}, nil, envScenario + " is not set"},
		{"unknown scenario", []string{"http://127.0.0.1:1/mcp"}, map[string]string{envScenario: "no-such-scenario"}, `unknown scenario "no-such-scenario"`},
		{"bare auth prefix", []string{"http://127.0.0.1:1/mcp"}, map[string]string{envScenario: "auth/"}, `unknown scenario "auth/"`},
		{"context not an object", []string{"http://127.0.0.1:1/mcp"}, map[string]string{envScenario: "initialize", envContext: "[1,2]"}, envContext + ": not a JSON object"},
		{"context null", []string{"http://127.0.0.1:1/mcp"}, map[string]string{envScenario: "initialize", envContext: "null"}, envContext + ": not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(context.Background(), tt.args, environ(tt.env), &stderr)
			if code != exitUsage {
				t.Errorf("exit code = %d, want %d (stderr: %s)", code, exitUsage, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.want)
			}
		})
	}
}

func TestUnknownScenarioListsKnownOnes(t *testing.T) {
	var stderr bytes.Buffer
	run(context.Background(), []string{"http://127.0.0.1:1/mcp"}, environ(map[string]string{envScenario: "tools-call"}), &stderr)
	for _, name := range []string{"initialize", "tools_call", "sse-retry", "auth/*"} {
		if !strings.Contains(stderr.String(), "  "+name) {
			t.Errorf("usage message does not list %q:\n%s", name, stderr.String())
		}
	}
}

// TestEverySuiteScenarioIsKnown: every client scenario of the pinned suite
// versions (from `conformance list`) has a player.
func TestEverySuiteScenarioIsKnown(t *testing.T) {
	names := []string{
		// 0.1.16
		"initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry",
		"auth/metadata-default", "auth/cross-app-access-complete-flow",
		// 0.2.0-alpha.12
		"request-metadata", "sep-2322-client-request-state",
		"http-standard-headers", "http-custom-headers", "http-invalid-tool-headers",
		"json-schema-ref-no-deref", "json-schema-2020-12-preservation",
		"sep-2640-client-no-prefetch", "sep-2640-client-verify-digest",
		"sep-2640-client-verify-size", "sep-2640-client-verify-frontmatter",
		"auth/iss-normalized", "auth/dpop-nonce", "auth/wif-jwt-bearer",
	}
	for _, n := range names {
		if _, ok := lookup(n); !ok {
			t.Errorf("scenario %q has no player", n)
		}
	}
}

func TestAcceptWithDefaults(t *testing.T) {
	// The requestedSchema of elicitation-sep1034-client-defaults, plus a
	// field without a default and one whose default has the wrong type.
	params := json.RawMessage(`{
		"message": "please accept with defaults",
		"requestedSchema": {"type": "object", "properties": {
			"name": {"type": "string", "default": "John Doe"},
			"age": {"type": "integer", "default": 30},
			"score": {"type": "number", "default": 95.5},
			"status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
			"verified": {"type": "boolean", "default": true},
			"nickname": {"type": "string"},
			"count": {"type": "integer", "default": "three"}
		}}
	}`)
	res, err := acceptWithDefaults(nil)(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	want := elicitResult{Action: "accept", Content: map[string]any{
		"name": "John Doe", "age": float64(30), "score": 95.5, "status": "active", "verified": true,
	}}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("result = %#v, want %#v", res, want)
	}

	res, err = acceptWithDefaults(map[string]any{"verified": false, "confirmed": true})(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	got := res.(elicitResult).Content
	if got["verified"] != false || got["confirmed"] != true || got["name"] != "John Doe" {
		t.Errorf("answers did not override defaults: %v", got)
	}

	res, err = acceptWithDefaults(nil)(context.Background(), json.RawMessage(`{"mode":"url","url":"https://example.com","message":"m"}`))
	if err != nil || res.(elicitResult).Action != "decline" {
		t.Errorf("URL-mode elicitation: got %v, %v; want decline", res, err)
	}

	_, err = acceptWithDefaults(nil)(context.Background(), json.RawMessage(`"not an object"`))
	if _, ok := err.(*mcp.RPCError); !ok {
		t.Errorf("malformed params: err = %v, want an *mcp.RPCError", err)
	}
}

func TestToolCalls(t *testing.T) {
	sc, err := parseContext(`{"name":"http-custom-headers","toolCalls":[{"name":"a","arguments":{"x":1}},{"name":"b"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	calls, err := toolCalls(sc)
	if err != nil {
		t.Fatal(err)
	}
	want := []toolCall{{"a", map[string]any{"x": float64(1)}}, {"b", map[string]any{}}}
	if !reflect.DeepEqual(calls, want) {
		t.Errorf("toolCalls = %v, want %v", calls, want)
	}
	if _, err := toolCalls(map[string]any{"toolCalls": []any{map[string]any{"arguments": map[string]any{}}}}); err == nil {
		t.Error("a call without a name was accepted")
	}
}

// TestScenariosAgainstMCPTest plays scenarios against andon's own test
// server over both Streamable HTTP generations: the generic ones pass, and
// one that needs a tool mcptest lacks fails with exit 1 and says why.
func TestScenariosAgainstMCPTest(t *testing.T) {
	gens := []struct {
		name     string
		gen      string
		versions []string
	}{
		{"stateless", mcptest.Stateless, nil},
		{"sessions", mcptest.Sessions, []string{mcp.Version20251125}},
	}
	for _, g := range gens {
		t.Run(g.name, func(t *testing.T) {
			s := mcptest.NewServer(&mcptest.Options{Versions: g.versions})
			t.Cleanup(s.Close)
			srv := httptest.NewServer(s.HTTPHandler(&mcptest.HTTPOptions{Generations: []string{g.gen}}))
			t.Cleanup(srv.Close)

			for _, sc := range []string{"initialize", "http-standard-headers", "sep-2640-client-no-prefetch"} {
				var stderr bytes.Buffer
				if code := run(context.Background(), []string{srv.URL}, environ(map[string]string{envScenario: sc}), &stderr); code != exitOK {
					t.Errorf("%s: exit code %d, want 0; stderr:\n%s", sc, code, stderr.String())
				}
			}

			var stderr bytes.Buffer
			code := run(context.Background(), []string{"--ignored", srv.URL}, environ(map[string]string{envScenario: "tools_call"}), &stderr)
			if code != exitFailed || !strings.Contains(stderr.String(), `the server offers no tool "add_numbers"`) {
				t.Errorf("tools_call: exit code %d, want %d with the missing tool named; stderr:\n%s", code, exitFailed, stderr.String())
			}
		})
	}
}
