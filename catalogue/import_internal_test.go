package catalogue

import (
	"errors"
	"strings"
	"testing"

	"github.com/andonhq/andon/mcp"
)

// An import whose tools would share a local name with another server's is
// refused, naming both in configuration order, and changes nothing.
func TestImportCollisionChangesNothing(t *testing.T) {
	cat := &Catalogue{}
	a := testServer(t, cat, Server{Name: "x"})
	b := testServer(t, cat, Server{Name: "x_y"})
	cat.servers = []*server{a, b}
	var err error
	if a.tools, err = a.makeTools([]mcp.Tool{{Name: "y_z"}}); err != nil {
		t.Fatal(err)
	}
	if b.tools, err = b.makeTools([]mcp.Tool{{Name: "w"}}); err != nil {
		t.Fatal(err)
	}
	if _, byName, err := cat.index(); err != nil || byName["mcp_x_y_w"] == nil {
		t.Fatalf("index = %v, %v", byName, err)
	}

	next, err := b.makeTools([]mcp.Tool{{Name: "z"}})
	if err != nil {
		t.Fatal(err)
	}
	err = cat.commit(b, next)
	if !errors.Is(err, ErrNameCollision) {
		t.Fatalf("commit = %v, want ErrNameCollision", err)
	}
	if !strings.Contains(err.Error(), `tool "y_z" of server "x" and tool "z" of server "x_y"`) {
		t.Errorf("error %q does not name both, in configuration order", err)
	}
	if _, byName, _ := cat.index(); len(b.imported()) != 1 || b.imported()[0].remote.Name != "w" || byName["mcp_x_y_w"] == nil {
		t.Errorf("a refused import changed the tools: %v, index %v", b.imported(), byName)
	}

	// A new tool list without the collision replaces the old one, and the
	// index follows.
	next, _ = b.makeTools([]mcp.Tool{{Name: "v"}})
	if err := cat.commit(b, next); err != nil {
		t.Fatal(err)
	}
	if _, byName, _ := cat.index(); byName["mcp_x_y_v"] == nil || byName["mcp_x_y_w"] != nil {
		t.Errorf("index after the import: %v", byName)
	}
}

func TestScrub(t *testing.T) {
	s := &Server{Name: "w", URL: "https://user:pw-secret@h.example/mcp?token=abcd1234&x=1",
		Headers: map[string]string{"Authorization": "Bearer abcd1234"}, Env: map[string]string{"K": "envsecret"}}
	msg := "GET https://user:pw-secret@h.example/mcp?token=abcd1234&x=1 Bearer abcd1234 envsecret"
	got := scrub(msg, serverSecrets(s))
	for _, secret := range []string{"pw-secret", "abcd1234", "envsecret"} {
		if strings.Contains(got, secret) {
			t.Errorf("scrub left %q in %q", secret, got)
		}
	}
	if !strings.Contains(got, "h.example/mcp") {
		t.Errorf("scrub removed more than the secrets: %q", got)
	}
	if u := redactURL(s.URL); u != "https://h.example/mcp" {
		t.Errorf("redactURL = %q", u)
	}
}
