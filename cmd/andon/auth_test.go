package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/egress"
	"github.com/andonhq/andon/internal/oauthtest"
	"github.com/andonhq/andon/mcp/oauth"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/vault"
)

// TestAuthLoginStatusLogout drives `andon auth login` as an operator
// would, against oidc-provider: the command prints the authorization URL,
// the (test) browser approves and is redirected to andon's loopback
// listener, and the token lands in the vault; status shows it without the
// token, logout removes it.
func TestAuthLoginStatusLogout(t *testing.T) {
	t.Parallel()
	env := oauthtest.Start(t, nil)
	d := newStoreDir(t)
	config := filepath.Join(d.dir, "andon.yaml")
	yaml := fmt.Sprintf("servers:\n  - name: tickets\n    url: %s\n    auth: oauth\n", env.RS.URL)
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	d.andon(t, "", "auth", "status", "--config", config).want(t, 0, "")
	if r := d.andon(t, "", "auth", "status", "--config", config); !strings.Contains(r.stdout, "needs `andon auth login tickets`") {
		t.Fatalf("status before login:\n%s", r.stdout)
	}

	// login, in the background: its stdout is the URL to open.
	pr, pw := io.Pipe()
	var stderr lockedBuf
	done := make(chan int, 1)
	go func() {
		code := run(t.Context(), []string{"auth", "login", "tickets", "--no-browser", "--config", config, "--db", d.db, "--key-file", d.keyFile},
			strings.NewReader(""), pw, &stderr)
		pw.Close()
		done <- code
	}()
	sc := bufio.NewScanner(pr)
	if !sc.Scan() {
		t.Fatalf("login printed no URL; stderr:\n%s", stderr.String())
	}
	authURL := sc.Text()
	go io.Copy(io.Discard, pr)
	if !strings.HasPrefix(authURL, env.AS.Issuer+"/auth?") || !strings.Contains(authURL, "redirect_uri=http%3A%2F%2F127.0.0.1%3A") {
		t.Fatalf("the URL printed: %q", authURL)
	}
	if err := oauthtest.Browse(t.Context(), authURL); err != nil {
		t.Fatalf("browsing: %v\nstderr:\n%s", err, stderr.String())
	}
	if code := <-done; code != 0 {
		t.Fatalf("login exited %d; stderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), `server "tickets": logged in (issuer `+env.AS.Issuer+")") {
		t.Fatalf("login said:\n%s", stderr.String())
	}

	status := d.andon(t, "", "auth", "status", "--config", config)
	if status.code != 0 || !strings.Contains(status.stdout, "logged in") || !strings.Contains(status.stdout, env.AS.Issuer) || !strings.Contains(status.stdout, "yes") {
		t.Fatalf("status after login (exit %d):\n%s\n%s", status.code, status.stdout, status.stderr)
	}

	// The token is in the vault and nowhere else.
	tok := storedToken(t, d, env)
	for _, out := range []string{authURL, stderr.String(), status.stdout, status.stderr} {
		if strings.Contains(out, tok.AccessToken) || strings.Contains(out, tok.RefreshToken) {
			t.Fatal("a token appears in the command's output")
		}
	}
	for _, r := range auditRows(t, d) {
		for _, f := range []string{r.Purpose, r.Path, r.Reason, r.Host} {
			if strings.Contains(f, tok.AccessToken) || strings.Contains(f, tok.RefreshToken) {
				t.Fatalf("a token appears in audit row %d", r.Seq)
			}
		}
	}

	d.andon(t, "", "auth", "logout", "tickets", "--config", config).want(t, 0, `removed 1 token(s)`)
	if r := d.andon(t, "", "auth", "status", "--config", config); !strings.Contains(r.stdout, "needs `andon auth login tickets`") {
		t.Fatalf("status after logout:\n%s", r.stdout)
	}
}

// TestAuthLoginRefusesAServerWithoutOAuth: the command names what is
// wrong rather than starting a flow.
func TestAuthLoginRefusesAServerWithoutOAuth(t *testing.T) {
	t.Parallel()
	d := newStoreDir(t)
	config := filepath.Join(d.dir, "andon.yaml")
	if err := os.WriteFile(config, []byte("servers:\n  - {name: plain, url: \"http://127.0.0.1:1/mcp\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d.andon(t, "", "auth", "login", "plain", "--no-browser", "--config", config).want(t, 1, `server "plain" does not have auth: oauth`)
	d.andon(t, "", "auth", "login", "nope", "--no-browser", "--config", config).want(t, 1, `no server called "nope"`)
	d.andon(t, "", "auth", "login", "--config", config).want(t, 2, "want exactly one SERVER")
}

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// storedToken reads the token the vault holds for the test server.
func storedToken(t *testing.T, d *storeDir, env *oauthtest.Env) struct{ AccessToken, RefreshToken string } {
	t.Helper()
	key, err := vault.ReadKeyFile(d.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlstore.Open(t.Context(), d.db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	v := vault.New(st, key)
	s := catalogue.Server{Name: "tickets", URL: env.RS.URL, Auth: catalogue.AuthOAuth}
	tr, err := catalogue.NewOAuthTransport(t.Context(), s, &catalogue.OAuthSetup{Egress: egress.Config{Audit: d.auditLog(t)}, Vault: v})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tr.Store.Token(context.Background(), oauth.Key{Issuer: env.AS.Issuer, Resource: env.RS.URL})
	if err != nil || tok.AccessToken == "" || tok.RefreshToken == "" {
		t.Fatalf("the stored token: %v", err)
	}
	return struct{ AccessToken, RefreshToken string }{tok.AccessToken, tok.RefreshToken}
}

func auditRows(t *testing.T, d *storeDir) []audit.Row {
	t.Helper()
	rows, err := d.auditLog(t).List(t.Context(), audit.Query{})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestAuthLoginClientCredentials: a machine-to-machine server needs no
// browser: login gets its token at once with the client secret that egress
// puts on the token request from the vault, and prints no URL.
func TestAuthLoginClientCredentials(t *testing.T) {
	t.Parallel()
	env := oauthtest.Start(t, &oauthtest.Config{Clients: []oauthtest.Client{{ClientID: "m2m", ClientSecret: "m2m-SECRET-value",
		GrantTypes: []string{"client_credentials"}, RedirectURIs: []string{}, ResponseTypes: []string{}, Scope: "mcp:read mcp:write"}}})
	d := newStoreDir(t)
	config := filepath.Join(d.dir, "andon.yaml")
	yaml := fmt.Sprintf("servers:\n  - name: robot\n    url: %s\n    auth: oauth\n    client_id: m2m\n    client_credentials: robot-m2m\n", env.RS.URL)
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	d.andon(t, "m2m:m2m-SECRET-value", "secret", "set", "robot-m2m", "--placement", "basic", "--host", "127.0.0.1").want(t, 0, "stored")
	r := d.andon(t, "", "auth", "login", "robot", "--no-browser", "--config", config)
	r.want(t, 0, `server "robot": logged in (issuer `+env.AS.Issuer+")")
	if r.stdout != "" || strings.Contains(r.stderr, "SECRET") {
		t.Fatalf("login printed %q on stdout; stderr:\n%s", r.stdout, r.stderr)
	}
	env.AS.Sync(t)
	if env.AS.Grants("client_credentials") != 1 {
		t.Fatalf("client credentials grants: %d; AS saw %+v", env.AS.Grants("client_credentials"), env.AS.Events())
	}
	var legs []string
	for _, row := range auditRows(t, d) {
		if row.Action == audit.ActionOAuthToken {
			legs = append(legs, row.Reason)
		}
	}
	if len(legs) != 1 || legs[0] != "client_credentials: ok" {
		t.Fatalf("oauth_token rows: %q", legs)
	}
}
