package catalogue_test

import (
	"testing"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
)

// A tool's identity changes with everything that decides what its calls
// reach — the server's command, environment, URL, headers, protocol and
// auth binding — and not with the operator's policies.
func TestToolIdentityFollowsTheServersDefinition(t *testing.T) {
	t.Parallel()
	base := catalogue.Server{Name: "gated", Command: []string{"deploy-server", "--env", "staging"}}
	identityOf := func(s catalogue.Server) string {
		f := newFixture(t, []catalogue.Server{s}, nil, nil)
		return f.tool("mcp_gated_echo").Identity()
	}
	want := identityOf(base)
	if len(want) != len("sha256:")+64 {
		t.Fatalf("identity %q is not a sha256 digest", want)
	}
	for _, tt := range []struct {
		name    string
		edit    func(*catalogue.Server)
		changes bool
	}{
		{"another argument", func(s *catalogue.Server) { s.Command[2] = "production" }, true},
		{"another program", func(s *catalogue.Server) { s.Command[0] = "other-server" }, true},
		{"an environment value", func(s *catalogue.Server) { s.Env = map[string]string{"TARGET": "prod"} }, true},
		{"a pinned protocol", func(s *catalogue.Server) { s.Protocol = "2025-06-18" }, true},
		{"a credential", func(s *catalogue.Server) { s.Credential = "deploy-token" }, true},
		{"approval policy", func(s *catalogue.Server) { s.RequiresApproval = ptr(false) }, false},
		{"four eyes", func(s *catalogue.Server) { s.Approval = catalogue.ApprovalOtherPerson }, false},
		{"effects", func(s *catalogue.Server) { s.Effects = map[string]agent.Effect{"echo": agent.EffectReadOnly} }, false},
	} {
		s := base
		s.Command = append([]string(nil), base.Command...)
		tt.edit(&s)
		if got := identityOf(s); (got != want) != tt.changes {
			t.Errorf("%s: identity changed = %v, want %v", tt.name, got != want, tt.changes)
		}
	}
}

// Over HTTP, the URL and the header values are part of the identity: the
// same name on another endpoint, or with another bearer, is another tool.
// (The fixture serves every server in process, whatever its URL.)
func TestToolIdentityOfAnHTTPServer(t *testing.T) {
	t.Parallel()
	base := catalogue.Server{Name: "gated", URL: "https://deploy.example.com/mcp", Headers: map[string]string{"X-Team": "a"}}
	identityOf := func(s catalogue.Server) string {
		f := newFixture(t, []catalogue.Server{s}, nil, nil)
		return f.tool("mcp_gated_echo").Identity()
	}
	want := identityOf(base)
	moved := base
	moved.URL = "https://deploy.evil.example/mcp"
	if identityOf(moved) == want {
		t.Error("another URL kept the identity")
	}
	reheaded := base
	reheaded.Headers = map[string]string{"X-Team": "b"}
	if identityOf(reheaded) == want {
		t.Error("another header value kept the identity")
	}
	oauth := base
	oauth.Auth = catalogue.AuthOAuth
	if identityOf(oauth) == want {
		t.Error("another auth binding kept the identity")
	}
}
