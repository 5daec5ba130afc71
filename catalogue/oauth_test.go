package catalogue_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/egress"
	"github.com/andonhq/andon/internal/oauthtest"
	"github.com/andonhq/andon/mcp/oauth"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/vault"
)

// oauthBundle is an OAuth-protected MCP server (oidc-provider and a
// resource server on loopback) and what andon keeps: a real SQLite store,
// its vault and audit log, and every log line andon wrote.
type oauthBundle struct {
	env     *oauthtest.Env
	dbPath  string
	vault   *vault.Vault
	secrets *countingSecrets
	log     *audit.Log
	logs    *lockedBuffer
	egress  egress.Config
	server  catalogue.Server
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// countingSecrets counts every read of a secret's value for a request.
type countingSecrets struct {
	*vault.Vault
	applies atomic.Int64
}

func (c *countingSecrets) Apply(ctx context.Context, name string, req *http.Request) error {
	c.applies.Add(1)
	return c.Vault.Apply(ctx, name, req)
}

func setupOAuth(t *testing.T, cfg *oauthtest.Config) *oauthBundle {
	t.Helper()
	env := oauthtest.Start(t, cfg)
	dbPath := filepath.Join(t.TempDir(), "andon.db")
	store, err := sqlstore.Open(context.Background(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	key, err := vault.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	v := vault.New(store, key)
	akey, err := v.DeriveKey(context.Background(), "audit hmac v1")
	if err != nil {
		t.Fatal(err)
	}
	b := &oauthBundle{env: env, dbPath: dbPath, vault: v, secrets: &countingSecrets{Vault: v}, log: audit.New(store, akey), logs: &lockedBuffer{}}
	b.egress = egress.Config{
		Audit:   b.log,
		Secrets: b.secrets,
		Logger:  slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		// The test allowlist: the servers listen on loopback.
		AllowedHosts: []string{"127.0.0.1"},
	}
	no := false
	b.server = catalogue.Server{Name: "tickets", URL: env.RS.URL, Auth: catalogue.AuthOAuth, RequiresApproval: &no}
	return b
}

// setup returns an OAuthSetup for interactive use (a login) or, with
// authorize nil, the runtime's.
func (b *oauthBundle) setup(authorize func(context.Context, string) (url.Values, error)) *catalogue.OAuthSetup {
	return &catalogue.OAuthSetup{Egress: b.egress, Vault: b.secrets, Authorize: authorize, RedirectURL: "http://127.0.0.1:9/callback"}
}

// login runs the authorization code flow as `andon auth login` does, the
// test user approving at once.
func (b *oauthBundle) login(t *testing.T) oauth.Key {
	t.Helper()
	tr, err := catalogue.NewOAuthTransport(context.Background(), b.server, b.setup(oauthtest.Approve))
	if err != nil {
		t.Fatal(err)
	}
	key, err := tr.Login(context.Background(), b.server.URL)
	if err != nil {
		t.Fatalf("login: %v\nAS saw: %+v", err, b.env.AS.Events())
	}
	return key
}

// catalogue returns the runtime's catalogue of the bundle's server: its
// OAuth client non-interactive, one per server, as node wires it.
func (b *oauthBundle) catalogue(t *testing.T) *catalogue.Catalogue {
	t.Helper()
	var mu sync.Mutex
	var client *http.Client
	cat, err := catalogue.New(&catalogue.Config{Servers: []catalogue.Server{b.server}}, &catalogue.Options{
		HTTPClient: func(ctx context.Context, s catalogue.Server) (*http.Client, error) {
			mu.Lock()
			defer mu.Unlock()
			if client == nil {
				tr, err := catalogue.NewOAuthTransport(ctx, s, b.setup(nil))
				if err != nil {
					return nil, err
				}
				client = &http.Client{Transport: tr}
			}
			return client, nil
		},
		Logger: b.egress.Logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cat.Close() })
	return cat
}

func (b *oauthBundle) call(ctx context.Context, t *testing.T, cat *catalogue.Catalogue, tool, args string) (*agent.ToolResult, error) {
	t.Helper()
	tl, err := cat.Lookup(ctx, tool)
	if err != nil {
		t.Fatalf("Lookup(%s): %v", tool, err)
	}
	return tl.Call(ctx, json.RawMessage(args))
}

func (b *oauthBundle) rows(t *testing.T) []audit.Row {
	t.Helper()
	rows, err := b.log.List(context.Background(), audit.Query{})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// assertNoTokenLeaked checks every token the resource server was sent,
// and every code and refresh token's tell-tale, against andon's logs, its
// audit rows and the errors given.
func (b *oauthBundle) assertNoTokenLeaked(t *testing.T, errs ...error) {
	t.Helper()
	tokens := b.env.RS.Tokens()
	if len(tokens) == 0 {
		t.Fatal("the resource server saw no token: nothing to check")
	}
	var hay []string
	hay = append(hay, b.logs.String())
	for _, r := range b.rows(t) {
		hay = append(hay, r.Purpose, r.Host, r.Path, r.Reason, r.Method, r.RunID)
	}
	for _, err := range errs {
		if err != nil {
			hay = append(hay, err.Error())
		}
	}
	raw, err := sql.Open("sqlite", b.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var sealed [][]byte
	rows, err := raw.Query(`SELECT sealed FROM secrets`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s []byte
		_ = rows.Scan(&s)
		sealed = append(sealed, s)
	}
	rows.Close()
	for i, tok := range tokens {
		for _, h := range hay {
			if strings.Contains(h, tok) {
				t.Fatalf("token %d of the resource server appears in andon's logs, audit rows or errors", i)
			}
		}
		for _, s := range sealed {
			if bytes.Contains(s, []byte(tok)) {
				t.Fatalf("token %d is in the database in the clear", i)
			}
		}
	}
}

// runTokenRow waits for the oauth_token row of run and returns it: the
// shared token leg ends on a goroutine of its own, after its caller has
// gone, so its row may be written a moment after the call returned.
func (b *oauthBundle) runTokenRow(t *testing.T, run string) audit.Row {
	t.Helper()
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		for _, r := range oauthRows(b.rows(t)) {
			if r.RunID == run {
				return r
			}
		}
		if time.Since(start) > oauthtest.WaitBudget {
			t.Fatalf("no oauth_token row for run %s within %v: %+v", run, oauthtest.WaitBudget, b.rows(t))
		}
	}
}

func oauthRows(rows []audit.Row) []audit.Row {
	var out []audit.Row
	for _, r := range rows {
		if r.Action == audit.ActionOAuthToken {
			out = append(out, r)
		}
	}
	return out
}

// TestOAuthLoginThenTheRuntimeCalls: `andon auth login`'s flow against
// oidc-provider — dynamic registration, authorization code with PKCE S256,
// the resource indicator — stores a token in the vault that the runtime's
// non-interactive client then sends, which the resource server accepts
// (audience = its resource). The token goes nowhere else.
func TestOAuthLoginThenTheRuntimeCalls(t *testing.T) {
	t.Parallel()
	b := setupOAuth(t, nil)
	key := b.login(t)
	if key.Issuer != b.env.AS.Issuer || key.Resource != b.env.RS.URL {
		t.Fatalf("login key = %+v", key)
	}
	cat := b.catalogue(t)
	res, err := b.call(context.Background(), t, cat, "mcp_tickets_echo", `{"text":"hello"}`)
	if err != nil || res.Outcome != agent.OutcomeOK || !strings.Contains(res.Text, "hello") {
		t.Fatalf("echo = %+v, %v", res, err)
	}

	b.env.AS.Sync(t)
	as := b.env.AS
	if n := as.Count(func(e oauthtest.Event) bool { return e.Event == "registration" }); n != 1 {
		t.Errorf("registrations = %d, want 1 (dynamic registration)", n)
	}
	auth := as.WaitFor(t, "the authorization", func(e oauthtest.Event) bool { return e.Event == "authorization.success" })
	if auth.CodeChallengeMethod != "S256" || auth.Resource != b.env.RS.URL {
		t.Errorf("authorization request: PKCE %q, resource %v; want S256 and %s", auth.CodeChallengeMethod, auth.Resource, b.env.RS.URL)
	}
	if as.Grants("authorization_code") != 1 {
		t.Errorf("code exchanges = %d, want 1", as.Grants("authorization_code"))
	}
	for _, e := range b.env.RS.Log() {
		if e.Outcome != oauthtest.OutcomeOK && e.Outcome != oauthtest.OutcomeNoToken {
			t.Errorf("the resource server refused a request: %+v", e)
		}
	}
	if b.env.RS.Count(oauthtest.OutcomeOK) == 0 {
		t.Error("the resource server accepted no request")
	}
	legs := oauthRows(b.rows(t))
	if len(legs) != 1 || legs[0].Reason != "authorization_code: ok" || !strings.Contains(legs[0].Purpose, "oauth tickets issuer "+as.Issuer) {
		t.Errorf("oauth_token rows = %+v, want one authorization_code: ok naming the issuer", legs)
	}
	b.assertNoTokenLeaked(t, err)
}

// TestOAuthWithoutLoginIsAFailedStepThatSaysSo: a run that reaches a
// server it holds no token for gets a failed tool step naming the
// command, and the servers page says the server needs a login.
func TestOAuthWithoutLoginIsAFailedStepThatSaysSo(t *testing.T) {
	t.Parallel()
	b := setupOAuth(t, nil)
	cat := b.catalogue(t)
	// The tool is named in the configuration, so the lookup finds the
	// server and reports its failed import.
	tl, err := cat.Lookup(context.Background(), "mcp_tickets_echo")
	var res *agent.ToolResult
	if err == nil {
		res, err = tl.Call(context.Background(), json.RawMessage(`{"text":"x"}`))
	}
	if err != nil || res.Outcome != agent.OutcomeFailed || !strings.Contains(res.Text, "needs `andon auth login tickets`") {
		t.Fatalf("call without a login = %+v, %v; want a failed step naming `andon auth login tickets`", res, err)
	}
	infos := cat.Servers()
	if len(infos) != 1 || !infos[0].NeedsLogin || infos[0].Auth != catalogue.AuthOAuth {
		t.Fatalf("Servers() = %+v, want NeedsLogin", infos)
	}
	if n := b.secrets.applies.Load(); n != 0 {
		t.Errorf("%d secrets were read", n)
	}
}

// TestOAuthRefreshIsSharedByTenCalls: ten calls whose token the server
// stopped accepting share one refresh, held at the authorization server
// until all ten have been refused.
func TestOAuthRefreshIsSharedByTenCalls(t *testing.T) {
	t.Parallel()
	b := setupOAuth(t, nil)
	b.login(t)
	cat := b.catalogue(t)
	if res, err := b.call(context.Background(), t, cat, "mcp_tickets_echo", `{"text":"warm"}`); err != nil || res.Outcome != agent.OutcomeOK {
		t.Fatalf("first call = %+v, %v", res, err)
	}
	ctx := context.Background()
	if err := b.env.AS.StallToken(ctx, true); err != nil {
		t.Fatal(err)
	}
	b.env.RS.RevokeSeen()
	refusedBefore := b.env.RS.Count(oauthtest.OutcomeInvalidToken)
	const n = 10
	var wg sync.WaitGroup
	results := make([]*agent.ToolResult, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { results[i], errs[i] = b.call(ctx, t, cat, "mcp_tickets_echo", `{"text":"again"}`) })
	}
	b.env.AS.WaitFor(t, "the refresh", func(e oauthtest.Event) bool { return e.Event == "token.held" })
	// Hold the refresh until every call has been refused and so is
	// waiting for a token; polling, with a round trip to the
	// authorization server as the pause.
	for start := time.Now(); b.env.RS.Count(oauthtest.OutcomeInvalidToken)-refusedBefore < n; {
		if time.Since(start) > oauthtest.WaitBudget {
			t.Fatalf("only %d of %d calls reached the server", b.env.RS.Count(oauthtest.OutcomeInvalidToken)-refusedBefore, n)
		}
		b.env.AS.Sync(t)
	}
	if err := b.env.AS.StallToken(ctx, false); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || results[i].Outcome != agent.OutcomeOK {
			t.Fatalf("call %d = %+v, %v", i, results[i], errs[i])
		}
	}
	b.env.AS.Sync(t)
	if got := b.env.AS.Grants("refresh_token"); got != 1 {
		t.Fatalf("refreshes = %d, want 1 shared by %d calls", got, n)
	}
	legs := oauthRows(b.rows(t))
	if last := legs[len(legs)-1]; last.Reason != "refresh_token: ok" {
		t.Errorf("last oauth_token row = %+v", last)
	}
	b.assertNoTokenLeaked(t, errs...)
}

// TestOAuthCancelDuringTheTokenRequest: a call cancelled while its refresh
// is at the authorization server abandons the request (the server sees its
// client go, the audit row says so) and leaves the stored token intact.
func TestOAuthCancelDuringTheTokenRequest(t *testing.T) {
	t.Parallel()
	b := setupOAuth(t, nil)
	key := b.login(t)
	cat := b.catalogue(t)
	if res, err := b.call(context.Background(), t, cat, "mcp_tickets_echo", `{"text":"warm"}`); err != nil || res.Outcome != agent.OutcomeOK {
		t.Fatalf("first call = %+v, %v", res, err)
	}
	store, err := catalogue.NewOAuthTransport(context.Background(), b.server, b.setup(nil))
	if err != nil {
		t.Fatal(err)
	}
	before, err := store.Store.Token(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.env.AS.StallToken(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	b.env.RS.RevokeSeen()
	ctx, cancel := context.WithCancel(agent.WithRunID(context.Background(), "run-cancel"))
	done := make(chan struct{})
	var res *agent.ToolResult
	var callErr error
	go func() {
		defer close(done)
		res, callErr = b.call(ctx, t, cat, "mcp_tickets_echo", `{"text":"cancel me"}`)
	}()
	b.env.AS.WaitFor(t, "the refresh", func(e oauthtest.Event) bool { return e.Event == "token.held" })
	cancel()
	<-done
	if callErr != nil || res.Outcome != agent.OutcomeCancelled {
		t.Fatalf("cancelled call = %+v, %v", res, callErr)
	}
	b.env.AS.WaitFor(t, "the client going away", func(e oauthtest.Event) bool { return e.Event == "token.abandoned" })
	if err := b.env.AS.StallToken(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if row := b.runTokenRow(t, "run-cancel"); row.Reason != "refresh_token: cancelled in flight, abandoned" {
		t.Fatalf("the run's oauth_token row = %+v", row)
	}
	after, err := store.Store.Token(context.Background(), key)
	if err != nil || after.AccessToken != before.AccessToken || after.RefreshToken != before.RefreshToken {
		t.Fatalf("the stored token changed after a cancelled refresh (err %v)", err)
	}
	b.env.AS.Sync(t)
	if b.env.AS.Grants("refresh_token") != 0 {
		t.Fatal("the abandoned refresh was granted")
	}
	b.assertNoTokenLeaked(t, callErr)
}

// TestOAuthClientCredentials: a machine-to-machine server gets its token
// with the client secret that egress puts on the token request from the
// vault; the OAuth client never holds it.
func TestOAuthClientCredentials(t *testing.T) {
	t.Parallel()
	b := setupOAuth(t, &oauthtest.Config{Clients: []oauthtest.Client{{ClientID: "m2m", ClientSecret: "m2m-SECRET-value",
		GrantTypes: []string{"client_credentials"}, RedirectURIs: []string{}, ResponseTypes: []string{}, Scope: "mcp:read mcp:write"}}})
	if err := b.vault.Set(context.Background(), "tickets-m2m", []byte("m2m:m2m-SECRET-value"), vault.Placement{Kind: vault.Basic}, []string{"127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	b.server.ClientID, b.server.ClientCredentials = "m2m", "tickets-m2m"
	cat := b.catalogue(t)
	res, err := b.call(context.Background(), t, cat, "mcp_tickets_echo", `{"text":"m2m"}`)
	if err != nil || res.Outcome != agent.OutcomeOK {
		t.Fatalf("echo = %+v, %v\nAS: %+v", res, err, b.env.AS.Events())
	}
	b.env.AS.Sync(t)
	g := b.env.AS.WaitFor(t, "the grant", func(e oauthtest.Event) bool { return e.Event == "grant.success" })
	if g.GrantType != "client_credentials" || g.ClientID != "m2m" || g.Resource != b.env.RS.URL {
		t.Fatalf("grant = %+v", g)
	}
	legs := oauthRows(b.rows(t))
	if len(legs) != 1 || legs[0].Reason != "client_credentials: ok" {
		t.Fatalf("oauth_token rows = %+v", legs)
	}
	if strings.Contains(b.logs.String(), "m2m-SECRET") {
		t.Fatal("the client secret is in the logs")
	}
	b.assertNoTokenLeaked(t, err)
}

// TestOAuthStepUp: a tool that needs a scope the token lacks is answered
// 403 insufficient_scope; the interactive client authorizes again for it
// and the call goes through.
func TestOAuthStepUp(t *testing.T) {
	t.Parallel()
	b := setupOAuth(t, &oauthtest.Config{RS: oauthtest.RSConfig{ToolScopes: map[string]string{"slow": "mcp:write"}}})
	b.server.Scopes = []string{"mcp:read"}
	b.login(t)
	tr, err := catalogue.NewOAuthTransport(context.Background(), b.server, b.setup(oauthtest.Approve))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalogue.New(&catalogue.Config{Servers: []catalogue.Server{b.server}}, &catalogue.Options{
		HTTPClient: func(context.Context, catalogue.Server) (*http.Client, error) { return &http.Client{Transport: tr}, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cat.Close() })
	res, err := b.call(context.Background(), t, cat, "mcp_tickets_slow", `{"ms":1}`)
	if err != nil || res.Outcome != agent.OutcomeOK {
		t.Fatalf("slow = %+v, %v", res, err)
	}
	if b.env.RS.Count(oauthtest.OutcomeInsufficientScope) == 0 {
		t.Fatal("the resource server never asked for more scope")
	}
	b.env.AS.Sync(t)
	if n := b.env.AS.Grants("authorization_code"); n != 2 {
		t.Fatalf("authorizations = %d, want 2 (login, then step-up)", n)
	}
	b.assertNoTokenLeaked(t, err)
}

// fixedResolver answers from a table, and nothing else.
type fixedResolver map[string]netip.Addr

func (r fixedResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return []netip.Addr{a}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// TestOAuthMetadataPointingAtAPrivateAddressIsRefused: a server whose
// authorization server metadata names a token endpoint on a private
// address (outside the test allowlist) is refused by egress's guard before
// the client secret is read, and nothing is sent there.
func TestOAuthMetadataPointingAtAPrivateAddressIsRefused(t *testing.T) {
	t.Parallel()
	b := setupOAuth(t, nil)
	mux := http.NewServeMux()
	fake := httptest.NewServer(mux)
	t.Cleanup(fake.Close)
	base := fake.URL
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+base+`/.well-known/oauth-protected-resource/mcp"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	})
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"resource": base + "/mcp", "authorization_servers": []string{base}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": base, "token_endpoint": "https://as.evil.test/token",
			"authorization_endpoint": base + "/auth", "response_types_supported": []string{"code"},
			"grant_types_supported": []string{"client_credentials"}, "code_challenge_methods_supported": []string{"S256"}})
	})
	// https, so that only egress's guard can refuse it: the name resolves
	// to a private address.
	b.egress.Resolver = fixedResolver{"as.evil.test": netip.MustParseAddr("10.20.30.40")}
	if err := b.vault.Set(context.Background(), "evil-m2m", []byte("m2m:m2m-SECRET-value"), vault.Placement{Kind: vault.Basic}, []string{"as.evil.test"}); err != nil {
		t.Fatal(err)
	}
	b.server.URL, b.server.ClientID, b.server.ClientCredentials = base+"/mcp", "m2m", "evil-m2m"
	cat := b.catalogue(t)
	_, err := cat.Import(context.Background(), "tickets")
	if !errors.Is(err, oauth.ErrURLRefused) {
		t.Fatalf("import = %v, want oauth.ErrURLRefused", err)
	}
	if n := b.secrets.applies.Load(); n != 0 {
		t.Fatalf("the client secret was read %d times", n)
	}
	var refused bool
	for _, r := range b.rows(t) {
		if r.Method == "VET" && r.Host == "as.evil.test" && r.Path == "/token" && r.Reason == string(egress.ReasonAddress) {
			refused = true
		}
		if r.Action == audit.ActionOAuthToken {
			t.Fatalf("a token request went out: %+v", r)
		}
	}
	if !refused {
		t.Fatalf("no refusal row for the token endpoint: %+v", b.rows(t))
	}
}

// TestOAuthRefreshSpendsTheCallsBudget: a refresh the authorization server
// never answers costs the call its budget, and no more: the step fails as
// timed out, the token request's row says the deadline passed, and the
// stored token is kept.
func TestOAuthRefreshSpendsTheCallsBudget(t *testing.T) {
	t.Parallel()
	b := setupOAuth(t, nil)
	key := b.login(t)
	// Generous: the handshake and first call must fit in it on a loaded
	// machine; the held refresh never does.
	b.server.Budget = catalogue.Budget{Timeout: 20 * time.Second}
	cat := b.catalogue(t)
	if res, err := b.call(context.Background(), t, cat, "mcp_tickets_echo", `{"text":"warm"}`); err != nil || res.Outcome != agent.OutcomeOK {
		t.Fatalf("first call = %+v, %v", res, err)
	}
	if err := b.env.AS.StallToken(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	b.env.RS.RevokeSeen()
	res, err := b.call(agent.WithRunID(context.Background(), "run-budget"), t, cat, "mcp_tickets_echo", `{"text":"held"}`)
	if err != nil || res.Outcome != agent.OutcomeFailed || !strings.Contains(res.Text, "timed out") {
		t.Fatalf("call whose refresh is held = %+v, %v; want a failed step that timed out", res, err)
	}
	b.env.AS.WaitFor(t, "the client going away", func(e oauthtest.Event) bool { return e.Event == "token.abandoned" })
	if err := b.env.AS.StallToken(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	reason := b.runTokenRow(t, "run-budget").Reason
	// The budget passed: a deadline, not a cancel. The shared leg is ended
	// with its last waiter's cause, so egress audits it as one.
	if want := "refresh_token: failed (deadline exceeded)"; reason != want {
		t.Fatalf("the run's oauth_token row reads %q, want %q", reason, want)
	}
	tr, err := catalogue.NewOAuthTransport(context.Background(), b.server, b.setup(nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Store.Token(context.Background(), key); err != nil {
		t.Fatalf("the stored token after the budget passed: %v", err)
	}
}
