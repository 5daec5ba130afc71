package catalogue_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp"
)

var modelName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestLocalName(t *testing.T) {
	long := strings.Repeat("x", 80)
	cases := []struct{ server, tool, want string }{
		{"demo", "echo", "mcp_demo_echo"},
		{"demo", "get-Issue_2", "mcp_demo_get-Issue_2"},
		{"demo", "files.read", "mcp_demo_files_read"},
		{"demo", "a/b c:d", "mcp_demo_a_b_c_d"},
		{"demo", "café", "mcp_demo_caf_"},
		{"demo", "日本", "mcp_demo___"},
		{"demo", long, "mcp_demo_" + strings.Repeat("x", 46) + "_" + "[0-9a-f]{8}"},
	}
	for _, c := range cases {
		got := catalogue.LocalName(c.server, c.tool)
		if !regexp.MustCompile("^" + c.want + "$").MatchString(got) {
			t.Errorf("LocalName(%q, %q) = %q, want %q", c.server, c.tool, got, c.want)
		}
		if !modelName.MatchString(got) {
			t.Errorf("LocalName(%q, %q) = %q, which model APIs refuse", c.server, c.tool, got)
		}
	}
	// Long names that share their first 64 characters stay apart.
	a := catalogue.LocalName("demo", long+"a")
	b := catalogue.LocalName("demo", long+"b")
	if a == b || len(a) != 64 || len(b) != 64 {
		t.Errorf("long names: %q and %q", a, b)
	}
	// The longest server name still leaves room for the tool.
	if got := catalogue.LocalName(strings.Repeat("s", catalogue.MaxServerNameLen), long); !modelName.MatchString(got) {
		t.Errorf("LocalName with the longest server name = %q", got)
	}
}

func TestEffectOf(t *testing.T) {
	yes, no := true, false
	ann := func(ro, idem, destr *bool) *mcp.ToolAnnotations {
		return &mcp.ToolAnnotations{ReadOnlyHint: ro, IdempotentHint: idem, DestructiveHint: destr}
	}
	cases := []struct {
		name    string
		ops     agent.Effect // "" when the operator says nothing
		trust   bool
		ann     *mcp.ToolAnnotations
		want    agent.Effect
		wantSrc string
	}{
		{"default", "", false, nil, agent.EffectNonIdempotentWrite, "default"},
		{"operator read_only", agent.EffectReadOnly, false, nil, agent.EffectReadOnly, "operator"},
		{"operator idempotent", agent.EffectIdempotentWrite, true, ann(&yes, nil, nil), agent.EffectIdempotentWrite, "operator"},
		{"operator non-idempotent beats a trusted read-only hint", agent.EffectNonIdempotentWrite, true, ann(&yes, nil, nil), agent.EffectNonIdempotentWrite, "operator"},
		{"trusted read-only", "", true, ann(&yes, nil, nil), agent.EffectReadOnly, "annotations"},
		{"trusted idempotent", "", true, ann(&no, &yes, nil), agent.EffectIdempotentWrite, "annotations"},
		{"trusted read-only wins over idempotent", "", true, ann(&yes, &yes, nil), agent.EffectReadOnly, "annotations"},
		{"trusted, not destructive is not enough", "", true, ann(&no, nil, &no), agent.EffectNonIdempotentWrite, "default"},
		{"trusted, read-only false", "", true, ann(&no, &no, nil), agent.EffectNonIdempotentWrite, "default"},
		{"trusted, no annotations", "", true, nil, agent.EffectNonIdempotentWrite, "default"},
		{"untrusted read-only", "", false, ann(&yes, nil, nil), agent.EffectNonIdempotentWrite, "default"},
		{"untrusted idempotent", "", false, ann(nil, &yes, nil), agent.EffectNonIdempotentWrite, "default"},
	}
	for _, c := range cases {
		s := &catalogue.Server{Name: "s", TrustAnnotations: c.trust}
		if c.ops != "" {
			s.Effects = map[string]agent.Effect{"t": c.ops}
		}
		got, src := catalogue.EffectOf(s, mcp.Tool{Name: "t", Annotations: c.ann})
		if got != c.want || src != c.wantSrc {
			t.Errorf("%s: EffectOf = %s (%s), want %s (%s)", c.name, got, src, c.want, c.wantSrc)
		}
	}
}

func TestResultText(t *testing.T) {
	cases := []struct {
		name string
		res  mcp.CallToolResult
		want string
	}{
		{"text blocks", mcp.CallToolResult{Content: []mcp.Content{{Type: "text", Text: "a"}, {Type: "text", Text: "b"}}}, "a\nb"},
		{"structured only", mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: json.RawMessage(`{"n":1}`)}, `{"n":1}`},
		{"text wins over structured", mcp.CallToolResult{Content: []mcp.Content{{Type: "text", Text: "t"}}, StructuredContent: json.RawMessage(`{"n":1}`)}, "t"},
		{"image and structured", mcp.CallToolResult{Content: []mcp.Content{{Type: "image", MIMEType: "image/png", Data: "AAAA"}}, StructuredContent: json.RawMessage(`[1]`)}, `[1]`},
		{"other blocks", mcp.CallToolResult{Content: []mcp.Content{
			{Type: "text", Text: "see:"},
			{Type: "image", MIMEType: "image/png", Data: "AAAA"},
			{Type: "resource_link", URI: "file:///a"},
			{Type: "resource", Resource: json.RawMessage(`{"uri":"file:///b","text":"inside b"}`)},
			{Type: "resource", Resource: json.RawMessage(`{"uri":"file:///c","blob":"AAAA"}`)},
			{Type: "hologram"},
		}}, "see:\n[image content, image/png, 4 bytes of base64]\n[resource link: file:///a]\ninside b\n[resource: file:///c]\n[hologram content]"},
		{"nothing", mcp.CallToolResult{}, ""},
	}
	for _, c := range cases {
		if got := catalogue.ResultText(&c.res); got != c.want {
			t.Errorf("%s: ResultText = %q, want %q", c.name, got, c.want)
		}
	}
}
