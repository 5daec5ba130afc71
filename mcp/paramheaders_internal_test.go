package mcp

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestScanParamHeaders(t *testing.T) {
	for _, tt := range []struct {
		schema string
		want   string // the headers found, or "error: …" substring
	}{
		{`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A"}}}`, "A@a"},
		{`{"type":"object","properties":{"o":{"type":"object","properties":{"b":{"type":"boolean","x-mcp-header":"B"}}}}}`, "B@o.b"},
		{`{"type":"object","properties":{"a":{"type":"object","x-mcp-header":"A"}}}`, "error: type"},
		{`{"type":"object","properties":{"a":{"type":"number","x-mcp-header":"A"}}}`, "error: type"},
		{`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Bad Name"}}}`, "error: token"},
		{`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"X"},"b":{"type":"string","x-mcp-header":"x"}}}`, "error: twice"},
		{`{"type":"object","properties":{"l":{"type":"array","items":{"type":"string","x-mcp-header":"I"}}}}`, "error: outside"},
		{`{"type":"object","anyOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}`, "error: outside"},
		{`{"type":"object","x-mcp-header":"Root"}`, "error: outside"},
		{`{"type":"object","properties":{"a":{"type":"string"}}}`, ""},
	} {
		decls, err := scanParamHeaders(json.RawMessage(tt.schema))
		var got string
		if err != nil {
			got = "error: " + err.Error()
		} else {
			var parts []string
			for _, d := range decls {
				parts = append(parts, d.name+"@"+strings.Join(d.path, "."))
			}
			got = strings.Join(parts, ",")
		}
		if strings.HasPrefix(tt.want, "error: ") {
			if !strings.HasPrefix(got, "error: ") || !strings.Contains(got, strings.TrimPrefix(tt.want, "error: ")) {
				t.Errorf("scan(%s) = %q, want %s", tt.schema, got, tt.want)
			}
		} else if got != tt.want {
			t.Errorf("scan(%s) = %q, want %q", tt.schema, got, tt.want)
		}
	}
}

func TestParamHeaderValues(t *testing.T) {
	decls := []paramHeader{{path: []string{"s"}, name: "S"}, {path: []string{"n"}, name: "N"}, {path: []string{"b"}, name: "B"}, {path: []string{"o", "x"}, name: "X"}}
	h := paramHeaderValues(decls, json.RawMessage(`{"s":" padded","n":12345678901234,"b":false,"o":{"x":null}}`))
	if h.Get("Mcp-Param-S") != "=?base64?IHBhZGRlZA==?=" || h.Get("Mcp-Param-N") != "12345678901234" || h.Get("Mcp-Param-B") != "false" {
		t.Errorf("headers = %v", h)
	}
	if _, ok := h["Mcp-Param-X"]; ok {
		t.Error("a null argument sent a header")
	}
}
