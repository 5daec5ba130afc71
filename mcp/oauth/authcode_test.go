package oauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/andonhq/andon/mcp/oauth"
)

// TestAuthorizationCodeFlow: a 401 leads to discovery through the
// challenge's resource_metadata, Dynamic Client Registration, an
// authorization request with PKCE S256, state and resource, a token
// request with the verifier and resource, and the same request retried
// with the token.
func TestAuthorizationCodeFlow(t *testing.T) {
	as := newAuthServer(t)
	rs := newResourceServer(t, as)
	tr := newTransport()

	status, body, err := post(t, context.Background(), tr, rs.mcpURL(), `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusOK || body != `{"jsonrpc":"2.0","id":1,"method":"tools/list"}` {
		t.Fatalf("got %d %q, want 200 and the request echoed", status, body)
	}

	bodies, auths := rs.seen()
	if len(bodies) != 2 || bodies[0] != bodies[1] {
		t.Errorf("resource server saw bodies %q, want the request twice (once without a token, once with)", bodies)
	}
	if auths[0] != "" || !strings.HasPrefix(auths[1], "Bearer at-") {
		t.Errorf("Authorization headers = %q, want none, then the bearer token", auths)
	}

	regs := as.regs()
	if len(regs) != 1 {
		t.Fatalf("registrations = %d, want 1", len(regs))
	}
	if got := regs[0]["application_type"]; got != "native" {
		t.Errorf("DCR application_type = %v, want native (loopback redirect)", got)
	}
	if got, _ := regs[0]["redirect_uris"].([]any); len(got) != 1 || got[0] != "http://127.0.0.1:9/callback" {
		t.Errorf("DCR redirect_uris = %v", regs[0]["redirect_uris"])
	}
	if got := regs[0]["grant_types"]; !slices.Equal(anyStrings(got), []string{"authorization_code", "refresh_token"}) {
		t.Errorf("DCR grant_types = %v, want authorization_code and refresh_token", got)
	}

	ar := as.auths()
	if len(ar) != 1 {
		t.Fatalf("authorization requests = %d, want 1", len(ar))
	}
	q := ar[0]
	for k, want := range map[string]string{
		"response_type":         "code",
		"code_challenge_method": "S256",
		"resource":              rs.mcpURL(),
		"client_id":             "client-1",
		"redirect_uri":          "http://127.0.0.1:9/callback",
	} {
		if q.Get(k) != want {
			t.Errorf("authorization request %s = %q, want %q", k, q.Get(k), want)
		}
	}
	if q.Get("state") == "" || len(q.Get("code_challenge")) != 43 {
		t.Errorf("authorization request state %q, code_challenge %q: want both", q.Get("state"), q.Get("code_challenge"))
	}

	toks := as.tokens()
	if len(toks) != 1 || toks[0].Grant != "authorization_code" {
		t.Fatalf("token requests = %+v, want one authorization_code", toks)
	}
	f := toks[0].Form
	if f.Get("resource") != rs.mcpURL() || f.Get("code_verifier") == "" || f.Get("redirect_uri") != "http://127.0.0.1:9/callback" {
		t.Errorf("token request form = %v, want resource, code_verifier and redirect_uri", f)
	}
	if !toks[0].HasBasic || toks[0].BasicUser != "client-1" {
		t.Errorf("token request used basic auth %v as %q, want client_secret_basic as client-1", toks[0].HasBasic, toks[0].BasicUser)
	}

	// A second request carries the token at once.
	if status, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("second request: %d, %v", status, err)
	}
	if _, auths := rs.seen(); len(auths) != 3 || auths[2] != auths[1] {
		t.Errorf("second request's Authorization = %q, want the same token, with no new 401", auths)
	}
	if len(as.auths()) != 1 || len(as.tokens()) != 1 {
		t.Errorf("second request caused more OAuth traffic: %d authorizations, %d token requests", len(as.auths()), len(as.tokens()))
	}
}

func anyStrings(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// TestAuthorizationRequired: without an Authorize hook, a resource that
// needs a user's authorization fails with *AuthorizationRequiredError
// naming it, and nothing is sent to the authorization endpoint.
func TestAuthorizationRequired(t *testing.T) {
	as := newAuthServer(t)
	rs := newResourceServer(t, as)
	tr := newTransport()
	tr.Authorize = nil
	_, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`)
	var are *oauth.AuthorizationRequiredError
	if !errors.As(err, &are) {
		t.Fatalf("err = %v, want *AuthorizationRequiredError", err)
	}
	if are.Resource != rs.mcpURL() || are.Issuer != as.issuer() {
		t.Errorf("AuthorizationRequiredError = %+v, want resource %s, issuer %s", are, rs.mcpURL(), as.issuer())
	}
	if len(as.auths()) != 0 || len(as.tokens()) != 0 {
		t.Errorf("the authorization server saw %d authorization and %d token requests, want none", len(as.auths()), len(as.tokens()))
	}
}

// TestCallbackChecks: the redirect's state and iss are checked before the
// code is redeemed (RFC 9207): a wrong iss, or none where the server
// promised one, is refused and the code never reaches the token endpoint;
// no iss where none is promised is accepted.
func TestCallbackChecks(t *testing.T) {
	tests := []struct {
		name      string
		issMode   string
		advertise any // authorization_response_iss_parameter_supported; nil removes it
		wantErr   error
	}{
		{"correct iss", "", true, nil},
		{"wrong iss", "wrong", true, oauth.ErrCallbackIssuer},
		{"wrong iss not advertised", "wrong", nil, oauth.ErrCallbackIssuer},
		{"missing iss advertised", "omit", true, oauth.ErrCallbackIssuer},
		{"missing iss not advertised", "omit", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := newAuthServer(t)
			as.issMode = tt.issMode
			as.metadata = map[string]any{"authorization_response_iss_parameter_supported": tt.advertise}
			rs := newResourceServer(t, as)
			_, _, err := post(t, context.Background(), newTransport(), rs.mcpURL(), `{}`)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil && len(as.tokens()) != 0 {
				t.Errorf("the code was redeemed after a refused callback: %d token requests", len(as.tokens()))
			}
		})
	}
}

// TestStateMismatchRefused: a redirect whose state is not the request's
// (a forged or replayed response) is refused.
func TestStateMismatchRefused(t *testing.T) {
	as := newAuthServer(t)
	rs := newResourceServer(t, as)
	tr := newTransport()
	tr.Authorize = func(ctx context.Context, u string) (url.Values, error) {
		v, err := followRedirect(ctx, u)
		if err == nil {
			v.Set("state", "forged")
		}
		return v, err
	}
	_, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`)
	if !errors.Is(err, oauth.ErrState) {
		t.Fatalf("err = %v, want ErrState", err)
	}
	if len(as.tokens()) != 0 {
		t.Errorf("the code was redeemed: %d token requests", len(as.tokens()))
	}
}

// TestAuthorizationErrorResponse: an error the authorization server sends
// to the redirect URI (the user declined) is an *AuthorizationError.
func TestAuthorizationErrorResponse(t *testing.T) {
	as := newAuthServer(t)
	rs := newResourceServer(t, as)
	tr := newTransport()
	tr.Authorize = func(ctx context.Context, u string) (url.Values, error) {
		return url.Values{"error": {"access_denied"}, "error_description": {"the user said no"}}, nil
	}
	_, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`)
	var ae *oauth.AuthorizationError
	if !errors.As(err, &ae) || ae.Code != "access_denied" {
		t.Fatalf("err = %v, want *AuthorizationError access_denied", err)
	}
}

// TestNoPKCERefused: an authorization server whose metadata does not list
// S256 (or lists no methods) is not used for the authorization code grant.
func TestNoPKCERefused(t *testing.T) {
	for _, methods := range []any{nil, []string{"plain"}} {
		as := newAuthServer(t)
		as.metadata = map[string]any{"code_challenge_methods_supported": methods}
		rs := newResourceServer(t, as)
		_, _, err := post(t, context.Background(), newTransport(), rs.mcpURL(), `{}`)
		if !errors.Is(err, oauth.ErrNoPKCE) {
			t.Errorf("methods %v: err = %v, want ErrNoPKCE", methods, err)
		}
		if len(as.auths()) != 0 || len(as.regs()) != 0 {
			t.Errorf("methods %v: the server saw %d authorization requests and %d registrations, want none", methods, len(as.auths()), len(as.regs()))
		}
	}
}
