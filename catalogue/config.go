package catalogue

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/mcp"
)

// AndonExecutable, as the first element of [Server].Command, stands for the
// andon binary that is running (os.Executable), so a configuration can run
// andon's own subcommands as servers: ["@andon", "mcptest", "serve"].
const AndonExecutable = "@andon"

// AuthOAuth is the [Server].Auth of a server behind OAuth.
const AuthOAuth = "oauth"

// MaxServerNameLen bounds a server's name, so that the local names of its
// tools (mcp_<server>_<tool>, at most 64 characters) keep room for the tool.
const MaxServerNameLen = 32

// Server is one MCP server: how to reach it, and how andon treats its
// tools. In andon.yaml it is one entry of the servers list:
//
//	servers:
//	  - name: demo
//	    command: ["@andon", "mcptest", "serve"]
//	    requires_approval: false
//	    effects: {echo: read_only, slow: read_only}
//	  - name: tickets
//	    url: https://tickets.example.com/mcp
//	    credential: tickets-token
//	    protocol: "2025-11-25"
//	    approval: other_person   # four eyes: not the run's owner
//	    timeout: 30s
//	    connect_timeout: 10s
//	    tools:
//	      export: {timeout: 5m, progress_resets_timeout: true, max_timeout: 30m}
type Server struct {
	// Name identifies the server, and prefixes its tools' local names:
	// 1 to 32 of a-z 0-9 _ -.
	Name string `yaml:"name"`

	// Command runs a stdio server: the program and its arguments. A first
	// element "@andon" is the running andon binary. Exactly one of Command
	// and URL is set.
	Command []string `yaml:"command,omitempty"`
	// Env holds environment variables for a stdio server. The server does
	// not inherit andon's environment, which may hold secrets: it gets
	// only HOME, LANG, LC_ALL, LC_CTYPE, LOGNAME, PATH, SHELL, TERM,
	// TMPDIR, TZ and USER from it, then Env.
	Env map[string]string `yaml:"env,omitempty"`

	// URL is the MCP endpoint of an HTTP server.
	URL string `yaml:"url,omitempty"`
	// Headers are sent with every request to an HTTP server, as written
	// here: a credential belongs in the vault instead (Credential), and
	// [Config.LogWarnings] warns of one that looks like it.
	Headers map[string]string `yaml:"headers,omitempty"`

	// Protocol pins the protocol revision, such as "2025-11-25". Empty
	// means negotiate.
	Protocol string `yaml:"protocol,omitempty"`

	// Credential names the vault secret that authenticates andon to the
	// server. It is carried for the egress wiring; the default dialler
	// does not inject it yet.
	Credential string `yaml:"credential,omitempty"`

	// Auth is [AuthOAuth] for a server behind the MCP authorization spec
	// (OAuth 2.1): andon discovers its authorization server, and sends the
	// token that `andon auth login NAME` (or the console's Connect) stored
	// in the vault, refreshing it as needed; or, with ClientCredentials,
	// gets tokens itself. Empty means none. Not with Credential.
	Auth string `yaml:"auth,omitempty"`
	// ClientID is a client registered with the server's authorization
	// server beforehand. Empty means register dynamically (RFC 7591).
	ClientID string `yaml:"client_id,omitempty"`
	// Scopes are requested instead of those the server asks for.
	Scopes []string `yaml:"scopes,omitempty"`
	// ClientCredentials names the vault secret of a machine-to-machine
	// client (the client credentials grant, with ClientID): placement
	// basic, value CLIENT_ID:CLIENT_SECRET, hosts the authorization
	// server's token endpoint host. egress puts it on the token request
	// and nowhere else.
	ClientCredentials string `yaml:"client_credentials,omitempty"`

	// RequiresApproval says whether an operator must approve each call of
	// the server's tools. Nil means true: see [Server.ApprovalRequired].
	RequiresApproval *bool `yaml:"requires_approval,omitempty"`
	// Approval says who may approve those calls: empty for anyone who may
	// act on the run, or [ApprovalOtherPerson] for four eyes.
	Approval string `yaml:"approval,omitempty"`
	// Enabled says whether the server's tools are offered at all. Nil
	// means true: see [Server.IsEnabled].
	Enabled *bool `yaml:"enabled,omitempty"`

	// Effects classify the server's tools, by their name on the server.
	// A tool not named here is a non-idempotent write, unless
	// TrustAnnotations lets the server suggest otherwise.
	Effects map[string]agent.Effect `yaml:"effects,omitempty"`
	// TrustAnnotations lets the server's tool annotations suggest an
	// effect (readOnlyHint → read_only, idempotentHint →
	// idempotent_write) for tools that Effects does not name. Effects
	// always wins.
	TrustAnnotations bool `yaml:"trust_annotations,omitempty"`

	// Budget bounds each call of the server's tools (timeout,
	// connect_timeout, progress_resets_timeout, max_timeout), and each
	// import of them: see [Budget]. The zero value is the defaults.
	Budget `yaml:",inline"`
	// Tools holds what applies to one tool only, by its name on the
	// server: a budget of its own, field by field over the server's.
	Tools map[string]ToolConfig `yaml:"tools,omitempty"`
}

// ApprovalRequired reports whether calls of the server's tools need an
// operator's approval: true unless RequiresApproval says false.
func (s *Server) ApprovalRequired() bool {
	return s.RequiresApproval == nil || *s.RequiresApproval
}

// IsEnabled reports whether the server's tools are offered: true unless
// Enabled says false.
func (s *Server) IsEnabled() bool {
	return s.Enabled == nil || *s.Enabled
}

// Config is the MCP servers section of andon.yaml. A program whose
// configuration file holds more sections can inline it in its own type
// (`yaml:",inline"`) and call [Config.Validate].
type Config struct {
	Servers []Server `yaml:"servers"`
}

// Load reads and validates the configuration file at path.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("catalogue: %w", err)
	}
	cfg, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// Parse reads and validates a configuration in YAML (or JSON, which is
// YAML too). Unknown fields are errors.
func Parse(data []byte) (*Config, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var cfg Config
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("catalogue: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

var serverNameRE = regexp.MustCompile(`^[a-z0-9_-]{1,32}$`)

// Validate reports everything wrong with the configuration, one line per
// problem, each naming its server.
func (c *Config) Validate() error {
	var errs []error
	seen := map[string]bool{}
	for i := range c.Servers {
		s := &c.Servers[i]
		if err := s.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("servers[%d]: %w", i, err))
		}
		if s.Name != "" {
			if seen[s.Name] {
				errs = append(errs, fmt.Errorf("servers[%d]: catalogue: server %q: the name is used twice", i, s.Name))
			}
			seen[s.Name] = true
		}
	}
	return errors.Join(errs...)
}

// Validate reports what is wrong with s.
func (s *Server) Validate() error {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	if !serverNameRE.MatchString(s.Name) {
		bad("name %q must be 1 to %d of a-z 0-9 _ -", s.Name, MaxServerNameLen)
	}
	switch {
	case len(s.Command) > 0 && s.URL != "":
		bad("set command or url, not both")
	case len(s.Command) == 0 && s.URL == "":
		bad("set command (a stdio server) or url (an HTTP server)")
	case len(s.Command) > 0:
		if s.Command[0] == "" {
			bad("command: the program is empty")
		}
		if len(s.Headers) > 0 {
			bad("headers are for an HTTP server (url), not a command")
		}
	default:
		u, err := url.Parse(s.URL)
		switch {
		case err != nil:
			bad("url is not a URL") // the text may hold a secret: do not echo it
		case u.Scheme != "http" && u.Scheme != "https":
			bad("url: scheme %q is not http or https", u.Scheme)
		case u.Host == "":
			bad("url has no host")
		}
		if len(s.Env) > 0 {
			bad("env is for a stdio server (command), not a url")
		}
	}
	for _, k := range sortedKeys(s.Env) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			bad("env: %q is not a variable name", k)
		}
	}
	for _, k := range sortedKeys(s.Headers) {
		if k == "" || strings.ContainsAny(k, " :\r\n\t") {
			bad("headers: %q is not a header name", k)
		}
	}
	if s.Protocol != "" && !slices.Contains(mcp.SupportedVersions(), s.Protocol) {
		bad("protocol %q is not one andon speaks (%s)", s.Protocol, strings.Join(mcp.SupportedVersions(), ", "))
	}
	problems = append(problems, s.authProblems()...)
	if s.Approval != "" && s.Approval != ApprovalOtherPerson {
		bad("approval %q is not %s (or empty, for anyone who may act on the run)", s.Approval, ApprovalOtherPerson)
	} else if s.Approval != "" && !s.ApprovalRequired() {
		bad("approval: %s asks for approvals that requires_approval: false turns off", s.Approval)
	}
	for _, tool := range sortedKeys(s.Effects) {
		switch e := s.Effects[tool]; e {
		case agent.EffectReadOnly, agent.EffectIdempotentWrite, agent.EffectNonIdempotentWrite:
		default:
			bad("effects: tool %q: effect %q is not %s, %s or %s", tool, e,
				agent.EffectReadOnly, agent.EffectIdempotentWrite, agent.EffectNonIdempotentWrite)
		}
		if tool == "" {
			bad("effects: a tool name is empty")
		}
	}
	problems = append(problems, s.Budget.problems(s.Budget)...)
	for _, tool := range sortedKeys(s.Tools) {
		if tool == "" {
			bad("tools: a tool name is empty")
			continue
		}
		tb := s.Tools[tool].Budget
		for _, p := range tb.problems(s.Budget.over(tb)) {
			bad("tools: %q: %s", tool, p)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	name := s.Name
	if name == "" {
		name = "(no name)"
	}
	return fmt.Errorf("catalogue: server %q: %s", name, strings.Join(problems, "; "))
}

// authProblems reports what is wrong with the server's auth settings.
func (s *Server) authProblems() []string {
	var problems []string
	switch s.Auth {
	case "":
		if s.ClientID != "" || len(s.Scopes) > 0 || s.ClientCredentials != "" {
			problems = append(problems, "client_id, scopes and client_credentials need auth: oauth")
		}
		return problems
	case AuthOAuth:
	default:
		return []string{fmt.Sprintf("auth %q is not %s (or empty)", s.Auth, AuthOAuth)}
	}
	if s.URL == "" {
		problems = append(problems, "auth: oauth is for an HTTP server (url)")
	}
	if s.Credential != "" {
		problems = append(problems, "set credential or auth: oauth, not both")
	}
	if s.ClientCredentials != "" && s.ClientID == "" {
		problems = append(problems, "client_credentials needs the client_id it is the secret of")
	}
	for _, sc := range s.Scopes {
		if sc == "" || strings.ContainsAny(sc, " \t\r\n\"") {
			problems = append(problems, fmt.Sprintf("scopes: %q is not a scope", sc))
		}
	}
	return problems
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
