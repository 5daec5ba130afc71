package oauthtest

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/andonhq/andon/internal/nodepeer"
)

//go:embed as.mjs
var asScript []byte

// StartBudget bounds starting the authorization server: node, loading
// oidc-provider and generating its signing keys. Generous, because the
// machines tests run on are shared.
const StartBudget = 60 * time.Second

// WaitBudget bounds waiting for an event the test caused.
const WaitBudget = 60 * time.Second

// Client is a client registered with the authorization server before it
// starts, in OAuth dynamic registration metadata (RFC 7591) terms.
type Client struct {
	ClientID                string   `json:"client_id"`
	ClientSecret            string   `json:"client_secret,omitempty"`
	ApplicationType         string   `json:"application_type,omitempty"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method,omitempty"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types,omitempty"`
	ResponseTypes           []string `json:"response_types"`
	Scope                   string   `json:"scope,omitempty"`
}

// Resource is a protected resource the server issues tokens for: JWT
// access tokens (RS256) whose audience is Resource.
type Resource struct {
	// Resource is the resource indicator (RFC 8707): the MCP endpoint.
	Resource string `json:"resource"`
	// Scopes are those a client may be granted for it.
	Scopes []string `json:"scopes"`
	// AccessTokenTTL is the tokens' lifetime in seconds. Zero means an hour.
	AccessTokenTTL int `json:"accessTokenTTL,omitempty"`
}

// ASConfig configures an [AS].
type ASConfig struct {
	// Resources are the resources it issues tokens for; a request for any
	// other fails with invalid_target.
	Resources []Resource `json:"resources"`
	// Clients are registered before it starts. Dynamic registration is
	// open besides.
	Clients []Client `json:"clients"`
	// AccessTokenTTL is the lifetime of client-credentials tokens in
	// seconds. Zero means an hour.
	AccessTokenTTL int `json:"accessTokenTTL,omitempty"`
}

// Event is one thing the authorization server saw. No event holds a token,
// a code or a secret.
type Event struct {
	At                  string   `json:"at"`
	Event               string   `json:"event"`
	Method              string   `json:"method,omitempty"`
	Path                string   `json:"path,omitempty"`
	GrantType           string   `json:"grant_type,omitempty"`
	ClientID            string   `json:"client_id,omitempty"`
	Resource            any      `json:"resource,omitempty"`
	Scope               string   `json:"scope,omitempty"`
	Prompt              string   `json:"prompt,omitempty"`
	Error               string   `json:"error,omitempty"`
	Description         string   `json:"description,omitempty"`
	AuthMethod          string   `json:"auth_method,omitempty"`
	CodeChallengeMethod string   `json:"code_challenge_method,omitempty"`
	RedirectURIs        []string `json:"redirect_uris,omitempty"`
	GrantTypes          []string `json:"grant_types,omitempty"`
}

// AS is oidc-provider, a certified OpenID provider, running on
// 127.0.0.1 for one test. Its user is logged in and consents to anything,
// so the authorization code flow runs without a person.
type AS struct {
	// Issuer is its issuer identifier, http://127.0.0.1:PORT.
	Issuer string

	mu      sync.Mutex
	events  []Event
	changed chan struct{} // closed and replaced on every event
	syncs   int
	stderr  bytes.Buffer
}

// StartAS starts the authorization server and stops it when the test ends.
// It skips the test without node (fails it under CI).
func StartAS(t testing.TB, cfg *ASConfig) *AS {
	t.Helper()
	modules := nodepeer.Install(t, nodepeer.OIDCProvider)
	node := nodepeer.Node(t)
	dir := t.TempDir()
	// ES modules resolve packages from node_modules beside them, never
	// through NODE_PATH: give the script one.
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatalf("oauthtest: %v", err)
	}
	script := filepath.Join(dir, "as.mjs")
	if err := os.WriteFile(script, asScript, 0o644); err != nil {
		t.Fatalf("oauthtest: %v", err)
	}
	if cfg == nil {
		cfg = &ASConfig{}
	}
	conf, err := json.Marshal(cfg)
	if err != nil {
		t.Fatalf("oauthtest: %v", err)
	}

	as := &AS{changed: make(chan struct{})}
	cmd := exec.Command(node, script, string(conf))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NODE_ENV=test")
	cmd.Stderr = &lockedWriter{mu: &as.mu, w: &as.stderr}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("oauthtest: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("oauthtest: starting node: %v", err)
	}
	ready := make(chan string, 1)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		first := true
		for sc.Scan() {
			if first {
				first = false
				var hello struct{ Issuer string }
				_ = json.Unmarshal(sc.Bytes(), &hello)
				ready <- hello.Issuer
				continue
			}
			var e Event
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				as.add(e)
			}
		}
		close(ready)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		<-readDone
	})
	select {
	case issuer, ok := <-ready:
		if !ok || issuer == "" {
			t.Fatalf("oauthtest: the authorization server did not start:\n%s", as.Stderr())
		}
		as.Issuer = issuer
	case <-time.After(StartBudget):
		t.Fatalf("oauthtest: the authorization server did not start within %v:\n%s", StartBudget, as.Stderr())
	}
	return as
}

func (as *AS) add(e Event) {
	as.mu.Lock()
	defer as.mu.Unlock()
	as.events = append(as.events, e)
	close(as.changed)
	as.changed = make(chan struct{})
}

// Events returns what the server has seen so far, in order.
func (as *AS) Events() []Event {
	as.mu.Lock()
	defer as.mu.Unlock()
	return append([]Event(nil), as.events...)
}

// Count returns how many events so far match match.
func (as *AS) Count(match func(Event) bool) int {
	n := 0
	for _, e := range as.Events() {
		if match(e) {
			n++
		}
	}
	return n
}

// Grants counts successful token requests of grantType.
func (as *AS) Grants(grantType string) int {
	return as.Count(func(e Event) bool { return e.Event == "grant.success" && e.GrantType == grantType })
}

// WaitFor waits until an event matches match and returns it, failing the
// test after [WaitBudget].
func (as *AS) WaitFor(t testing.TB, what string, match func(Event) bool) Event {
	t.Helper()
	deadline := time.After(WaitBudget)
	for {
		as.mu.Lock()
		for _, e := range as.events {
			if match(e) {
				as.mu.Unlock()
				return e
			}
		}
		changed := as.changed
		as.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("oauthtest: the authorization server did not see %s within %v; it saw %+v", what, WaitBudget, as.Events())
			return Event{}
		}
	}
}

// Sync waits until the server's log holds everything it did before now:
// it logs after it answers, so a test that counts what it saw syncs first.
func (as *AS) Sync(t testing.TB) {
	t.Helper()
	as.mu.Lock()
	as.syncs++
	path := fmt.Sprintf("/__test/sync/%d", as.syncs)
	as.mu.Unlock()
	resp, err := http.Get(as.Issuer + path)
	if err != nil {
		t.Fatalf("oauthtest: sync: %v", err)
	}
	resp.Body.Close()
	as.WaitFor(t, "the sync request", func(e Event) bool { return e.Event == "request" && e.Path == path })
}

// Stderr returns what node wrote to stderr.
func (as *AS) Stderr() string {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.stderr.String()
}

// StallToken makes the token endpoint hold every request (on) until it is
// released (off) or its client goes away, which the server records as a
// "token.abandoned" event; a held request is a "token.held" event.
func (as *AS) StallToken(ctx context.Context, on bool) error {
	v := "0"
	if on {
		v = "1"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, as.Issuer+"/__test/stall-token?on="+v, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("oauthtest: stall-token: %w", err)
	}
	resp.Body.Close()
	return nil
}

// Metadata returns the server's discovery document.
func (as *AS) Metadata(ctx context.Context) (map[string]any, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, as.Issuer+"/.well-known/openid-configuration", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("oauthtest: discovery: %w", err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		return nil, fmt.Errorf("oauthtest: discovery: %w", err)
	}
	return m, nil
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
