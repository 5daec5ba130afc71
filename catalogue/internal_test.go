package catalogue

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/mcp"
)

func testServer(t *testing.T, cat *Catalogue, cfg Server) *server {
	t.Helper()
	return &server{cat: cat, cfg: cfg, logger: slog.New(slog.DiscardHandler), sem: make(chan struct{}, 1)}
}

// Two tools of one server that map to one local name are an error naming
// both.
func TestCollisionWithinServer(t *testing.T) {
	s := testServer(t, &Catalogue{}, Server{Name: "s"})
	_, err := s.makeTools([]mcp.Tool{{Name: "files.read"}, {Name: "files_read"}})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`tool "files.read" of server "s"`, `tool "files_read" of server "s"`, `"mcp_s_files_read"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %s", err, want)
		}
	}
	// A tool listed twice collides with itself.
	if _, err := s.makeTools([]mcp.Tool{{Name: "x"}, {Name: "x"}}); err == nil {
		t.Error("a tool listed twice is not an error")
	}
	// A tool without a name is skipped.
	tools, err := s.makeTools([]mcp.Tool{{Name: ""}, {Name: "x"}})
	if err != nil || len(tools) != 1 {
		t.Errorf("makeTools with a nameless tool = %d tools, %v", len(tools), err)
	}
}

// Tools of two servers can collide too ("x" with "y_z", "x_y" with "z"):
// the listing fails, naming both, and nothing is offered.
func TestCollisionAcrossServers(t *testing.T) {
	cat := &Catalogue{}
	a := testServer(t, cat, Server{Name: "x"})
	b := testServer(t, cat, Server{Name: "x_y"})
	var err error
	if a.tools, err = a.makeTools([]mcp.Tool{{Name: "y_z"}}); err != nil {
		t.Fatal(err)
	}
	if b.tools, err = b.makeTools([]mcp.Tool{{Name: "z"}}); err != nil {
		t.Fatal(err)
	}
	cat.servers = []*server{a, b}
	tools, err := cat.List(context.Background())
	if err == nil {
		t.Fatalf("List = %d tools, want an error", len(tools))
	}
	for _, want := range []string{`tool "y_z" of server "x"`, `tool "z" of server "x_y"`, `"mcp_x_y_z"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %s", err, want)
		}
	}
}

func TestTruncate(t *testing.T) {
	if got := truncate("short", 10); got != "short" {
		t.Errorf("truncate(short) = %q", got)
	}
	s := strings.Repeat("é", 10) // 20 bytes
	got := truncate(s, 5)
	if !strings.HasPrefix(got, "éé\n\n[andon: the result was cut to its first 4 of 20 bytes]") || !utf8.ValidString(got) {
		t.Errorf("truncate = %q", got)
	}
}

// A stdio server gets a small part of andon's environment and its own.
func TestServerEnv(t *testing.T) {
	t.Setenv("ANDON_VAULT_KEY", "s3cret")
	t.Setenv("PATH", "/usr/bin")
	t.Setenv("HOME", "/home/andon")
	env := strings.Join(serverEnv(map[string]string{"HOME": "/srv", "B": "2", "A": "1"}), " ")
	if strings.Contains(env, "s3cret") {
		t.Errorf("a server inherited a secret: %s", env)
	}
	for _, want := range []string{"PATH=/usr/bin", "HOME=/srv", "A=1 B=2"} {
		if !strings.Contains(env, want) {
			t.Errorf("env %q lacks %q", env, want)
		}
	}
	if strings.Contains(env, "/home/andon") {
		t.Errorf("env %q keeps andon's HOME over the configured one", env)
	}
}

func TestOperatorReadOnlyAgainstAnnotations(t *testing.T) {
	var seen []string
	s := testServer(t, &Catalogue{}, Server{Name: "s", TrustAnnotations: true,
		Effects: map[string]agent.Effect{"rm": agent.EffectReadOnly}})
	s.logger = slog.New(&levelHandler{min: slog.LevelWarn, seen: &seen})
	yes := true
	tool := newTool(s, "mcp_s_rm", mcp.Tool{Name: "rm", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}})
	if tool.Effect() != agent.EffectReadOnly {
		t.Errorf("effect = %s, want the operator's read_only", tool.Effect())
	}
	if len(seen) != 1 || !strings.Contains(seen[0], "the server says it writes") {
		t.Errorf("logged %q, want one warning", seen)
	}
	// No schema and no description: the model still gets both.
	if spec := tool.Spec(); string(spec.InputSchema) != `{"type":"object"}` || spec.Description == "" {
		t.Errorf("spec = %+v", spec)
	}
}

// levelHandler records the messages at or above min.
type levelHandler struct {
	min  slog.Level
	seen *[]string
}

func (h *levelHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.min }
func (h *levelHandler) Handle(_ context.Context, r slog.Record) error {
	*h.seen = append(*h.seen, r.Message)
	return nil
}
func (h *levelHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *levelHandler) WithGroup(string) slog.Handler      { return h }
