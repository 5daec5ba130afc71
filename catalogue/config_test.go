package catalogue_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
)

const goodConfig = `
servers:
  - name: demo
    command: ["@andon", "mcptest", "serve"]
    env: {DEMO: "1"}
    requires_approval: false
    effects:
      echo: read_only
      slow: idempotent_write
    trust_annotations: true
  - name: tickets_2
    url: https://tickets.example.com/mcp
    headers: {X-Api-Version: "2"}
    protocol: "2025-11-25"
    credential: tickets-token
    enabled: false
`

func TestLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "andon.yaml")
	if err := os.WriteFile(path, []byte(goodConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := catalogue.Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(cfg.Servers) != 2 {
		t.Fatalf("servers = %+v", cfg.Servers)
	}
	demo, tickets := cfg.Servers[0], cfg.Servers[1]
	if demo.Name != "demo" || strings.Join(demo.Command, " ") != "@andon mcptest serve" || demo.Env["DEMO"] != "1" ||
		demo.ApprovalRequired() || !demo.IsEnabled() || !demo.TrustAnnotations ||
		demo.Effects["echo"] != agent.EffectReadOnly || demo.Effects["slow"] != agent.EffectIdempotentWrite {
		t.Errorf("demo = %+v", demo)
	}
	if tickets.URL != "https://tickets.example.com/mcp" || tickets.Headers["X-Api-Version"] != "2" ||
		tickets.Protocol != "2025-11-25" || tickets.Credential != "tickets-token" ||
		!tickets.ApprovalRequired() || tickets.IsEnabled() || tickets.TrustAnnotations {
		t.Errorf("tickets = %+v", tickets)
	}
}

// Approval and enablement default to on; a zero Server built in Go gets the
// same safe defaults as one read from a file.
func TestDefaults(t *testing.T) {
	var s catalogue.Server
	if !s.ApprovalRequired() || !s.IsEnabled() {
		t.Errorf("zero Server: approval %v, enabled %v; want both true", s.ApprovalRequired(), s.IsEnabled())
	}
	cfg, err := catalogue.Parse([]byte("servers:\n  - {name: x, command: [x]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s := cfg.Servers[0]; !s.ApprovalRequired() || !s.IsEnabled() || s.TrustAnnotations {
		t.Errorf("server without settings = %+v", s)
	}
	// An empty file is an empty catalogue.
	if cfg, err := catalogue.Parse(nil); err != nil || len(cfg.Servers) != 0 {
		t.Errorf("Parse(empty) = %+v, %v", cfg, err)
	}
}

func TestLoadMissing(t *testing.T) {
	_, err := catalogue.Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want fs.ErrNotExist", err)
	}
}

func TestConfigErrors(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"unknown field", "servers:\n  - name: x\n    comand: [x]\n", `line 3: field comand not found`},
		{"unknown top-level field", "server:\n  - name: x\n", `field server not found`},
		{"no name", "servers:\n  - command: [x]\n", `name "" must be 1 to 32 of a-z 0-9 _ -`},
		{"upper case", "servers:\n  - {name: Demo, command: [x]}\n", `name "Demo" must be`},
		{"dot", "servers:\n  - {name: a.b, command: [x]}\n", `name "a.b" must be`},
		{"too long", "servers:\n  - {name: " + strings.Repeat("a", 33) + ", command: [x]}\n", "must be 1 to 32"},
		{"both", "servers:\n  - {name: x, command: [x], url: 'http://h/mcp'}\n", "set command or url, not both"},
		{"neither", "servers:\n  - {name: x}\n", "set command (a stdio server) or url (an HTTP server)"},
		{"empty program", "servers:\n  - {name: x, command: ['']}\n", "the program is empty"},
		{"scheme", "servers:\n  - {name: x, url: 'ftp://h/mcp'}\n", `scheme "ftp" is not http or https`},
		{"no host", "servers:\n  - {name: x, url: 'http:///mcp'}\n", "url has no host"},
		{"headers on a command", "servers:\n  - {name: x, command: [x], headers: {A: b}}\n", "headers are for an HTTP server"},
		{"env on a url", "servers:\n  - {name: x, url: 'http://h/mcp', env: {A: b}}\n", "env is for a stdio server"},
		{"bad env name", "servers:\n  - {name: x, command: [x], env: {'A=B': c}}\n", `env: "A=B" is not a variable name`},
		{"bad header name", "servers:\n  - {name: x, url: 'http://h/', headers: {'A B': c}}\n", `headers: "A B" is not a header name`},
		{"protocol", "servers:\n  - {name: x, command: [x], protocol: '2023-01-01'}\n", `protocol "2023-01-01" is not one andon speaks`},
		{"effect", "servers:\n  - {name: x, command: [x], effects: {echo: readonly}}\n", `effects: tool "echo": effect "readonly" is not read_only, idempotent_write or non_idempotent_write`},
		{"duplicate", "servers:\n  - {name: x, command: [x]}\n  - {name: x, command: [y]}\n", `servers[1]: catalogue: server "x": the name is used twice`},
		{"duplicate key", "servers:\n  - name: x\n    name: y\n    command: [x]\n", `mapping key "name" already defined at line 2`},
		{"not a list", "servers: {name: x}\n", "cannot unmarshal"},
		{"approval not a bool", "servers:\n  - {name: x, command: [x], requires_approval: maybe}\n", "cannot unmarshal"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := catalogue.Parse([]byte(c.yaml))
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", cfg)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error = %q\nwant it to contain %q", err, c.want)
			}
		})
	}
}

// Every problem is reported at once, each naming its server.
func TestConfigErrorsAllReported(t *testing.T) {
	_, err := catalogue.Parse([]byte("servers:\n  - {name: ok, command: [x]}\n  - {name: A, command: [x]}\n  - {name: b, url: 'ftp://h'}\n"))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`servers[1]: catalogue: server "A"`, `servers[2]: catalogue: server "b"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error = %q\nwant it to contain %q", err, want)
		}
	}
	if strings.Contains(err.Error(), `"ok"`) {
		t.Errorf("error = %q names a good server", err)
	}
}

// A URL that does not parse is not echoed: it may hold a secret.
func TestConfigURLNotEchoed(t *testing.T) {
	_, err := catalogue.Parse([]byte("servers:\n  - {name: x, url: \"http://user:pw@h:s3cret/mcp\"}\n"))
	if err == nil {
		t.Fatal("no error")
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %q repeats the URL", err)
	}
}

func TestNewValidates(t *testing.T) {
	_, err := catalogue.New(&catalogue.Config{Servers: []catalogue.Server{{Name: "x"}}}, nil)
	if err == nil {
		t.Error("New accepted a server with neither command nor url")
	}
	cat, err := catalogue.New(nil, nil)
	if err != nil {
		t.Fatalf("New(nil) = %v", err)
	}
	defer cat.Close()
}

// Budgets: per server, overridden per tool field by field, with defaults
// filled in.
func TestBudgets(t *testing.T) {
	cfg, err := catalogue.Parse([]byte(`
servers:
  - name: s
    command: [x]
    timeout: 30s
    connect_timeout: 10s
    tools:
      report: {timeout: 2m, progress_resets_timeout: true, max_timeout: 30m}
      resets: {progress_resets_timeout: true}
      quick: {timeout: 5s, connect_timeout: 2s}
  - name: plain
    command: [x]
`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	s, plain := &cfg.Servers[0], &cfg.Servers[1]
	type budget struct {
		timeout, connect, max time.Duration
		resets                bool
	}
	get := func(s *catalogue.Server, tool string) budget {
		b := s.ToolBudget(tool)
		return budget{b.Timeout, b.ConnectTimeout, b.MaxTimeout, *b.ProgressResetsTimeout}
	}
	for _, c := range []struct {
		s    *catalogue.Server
		tool string
		want budget
	}{
		{s, "other", budget{30 * time.Second, 10 * time.Second, 0, false}},
		{s, "report", budget{2 * time.Minute, 10 * time.Second, 30 * time.Minute, true}},
		{s, "resets", budget{30 * time.Second, 10 * time.Second, catalogue.DefaultMaxTimeout, true}},
		{s, "quick", budget{5 * time.Second, 2 * time.Second, 0, false}},
		{plain, "any", budget{catalogue.DefaultTimeout, 0, 0, false}},
	} {
		if got := get(c.s, c.tool); got != c.want {
			t.Errorf("%s/%s: budget %+v, want %+v", c.s.Name, c.tool, got, c.want)
		}
	}
}

func TestBudgetErrors(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"unknown budget key", "servers:\n  - name: x\n    command: [x]\n    timeuot: 5s\n", "field timeuot not found"},
		{"unknown tool key", "servers:\n  - name: x\n    command: [x]\n    tools: {t: {timeuot: 5s}}\n", "field timeuot not found"},
		{"not a duration", "servers:\n  - {name: x, command: [x], timeout: 5 minutes}\n", "cannot unmarshal"},
		{"a bare number", "servers:\n  - {name: x, command: [x], timeout: 5}\n", "cannot unmarshal"},
		{"bad tool duration", "servers:\n  - {name: x, command: [x], tools: {t: {max_timeout: soon}}}\n", "cannot unmarshal"},
		{"negative", "servers:\n  - {name: x, command: [x], timeout: -5s}\n", "timeout -5s is negative"},
		{"negative per tool", "servers:\n  - {name: x, command: [x], tools: {t: {connect_timeout: -1s}}}\n", `tools: "t": connect_timeout -1s is negative`},
		{"max without resets", "servers:\n  - {name: x, command: [x], max_timeout: 5m}\n", "max_timeout is the ceiling of a timeout that progress resets"},
		{"max below timeout", "servers:\n  - {name: x, command: [x], timeout: 5m, progress_resets_timeout: true, max_timeout: 1m}\n", "max_timeout 1m0s is shorter than timeout 5m0s"},
		{"max below a tool's timeout", "servers:\n  - {name: x, command: [x], progress_resets_timeout: true, max_timeout: 1m, tools: {t: {timeout: 2m}}}\n", `tools: "t": max_timeout 1m0s is shorter than timeout 2m0s`},
		{"connect above timeout", "servers:\n  - {name: x, command: [x], timeout: 5s, connect_timeout: 10s}\n", "connect_timeout 10s is longer than timeout 5s"},
		{"connect above the default", "servers:\n  - {name: x, command: [x], connect_timeout: 2m}\n", "connect_timeout 2m0s is longer than timeout 1m0s"},
		{"empty tool name", "servers:\n  - {name: x, command: [x], tools: {'': {timeout: 1s}}}\n", "tools: a tool name is empty"},
		{"resets not a bool", "servers:\n  - {name: x, command: [x], progress_resets_timeout: often}\n", "cannot unmarshal"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := catalogue.Parse([]byte(c.yaml))
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", cfg)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error = %q\nwant it to contain %q", err, c.want)
			}
		})
	}
}
