package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/andonhq/andon/mcp/mcptest"
)

// TestStandardHeadersReadsResourcesAndPrompts: http-standard-headers reads
// every resource the server lists and gets every prompt (a required
// argument filled in), each request carrying the Mcp-Method and Mcp-Name
// headers the suite checks.
func TestStandardHeadersReadsResourcesAndPrompts(t *testing.T) {
	s := mcptest.NewServer(nil)
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.HTTPHandler(&mcptest.HTTPOptions{Generations: []string{mcptest.Stateless}}))
	t.Cleanup(srv.Close)

	var stderr bytes.Buffer
	if code := run(context.Background(), []string{srv.URL}, environ(map[string]string{envScenario: "http-standard-headers"}), &stderr); code != exitOK {
		t.Fatalf("exit code %d, want 0; stderr:\n%s", code, stderr.String())
	}
	names := func(method, field string) []string {
		var got []string
		for _, r := range s.ReceivedMessages(method) {
			if m := r.Header.Get("Mcp-Method"); m != method {
				t.Errorf("%s carried Mcp-Method %q", method, m)
			}
			var p map[string]any
			json.Unmarshal(r.Params, &p)
			if h, _ := p[field].(string); r.Header.Get("Mcp-Name") != h {
				t.Errorf("%s of %q carried Mcp-Name %q", method, h, r.Header.Get("Mcp-Name"))
			}
			got = append(got, r.Header.Get("Mcp-Name"))
		}
		return got
	}
	if got, want := names("resources/read", "uri"), []string{"mcptest://static/hello", "mcptest://static/bytes", "mcptest://static/readme"}; !slices.Equal(got, want) {
		t.Errorf("resources/read of %q, want %q", got, want)
	}
	if got, want := names("prompts/get", "name"), []string{"greet", "plain"}; !slices.Equal(got, want) {
		t.Errorf("prompts/get of %q, want %q", got, want)
	}
	for _, m := range []string{"resources/list", "prompts/list"} {
		if len(names(m, "")) == 0 {
			t.Errorf("no %s", m)
		}
	}
}
