package oauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp/oauth"
)

// TestTokenEndpointAuthMethods: the client authenticates at the token
// endpoint the way its registration says: HTTP Basic, the form, or (a
// public client) its client_id alone.
func TestTokenEndpointAuthMethods(t *testing.T) {
	for _, m := range []oauth.AuthMethod{oauth.AuthClientSecretBasic, oauth.AuthClientSecretPost, oauth.AuthNone} {
		t.Run(string(m), func(t *testing.T) {
			as := newAuthServer(t)
			as.metadata = map[string]any{"token_endpoint_auth_methods_supported": []string{string(m)}}
			rs := newResourceServer(t, as)
			if status, _, err := post(t, context.Background(), newTransport(), rs.mcpURL(), `{}`); err != nil || status != http.StatusOK {
				t.Fatalf("got %d, %v", status, err)
			}
			if got := as.regs()[0]["token_endpoint_auth_method"]; got != string(m) {
				t.Errorf("DCR asked for %v, want %s", got, m)
			}
			tr := as.tokens()[0]
			f := tr.Form
			switch m {
			case oauth.AuthClientSecretBasic:
				if !tr.HasBasic || tr.BasicUser != "client-1" || tr.BasicPass != "secret-1-SECRETCLIENT" || f.Has("client_secret") {
					t.Errorf("basic: header %v %q, form %v", tr.HasBasic, tr.BasicUser, f)
				}
			case oauth.AuthClientSecretPost:
				if tr.HasBasic || f.Get("client_id") != "client-1" || f.Get("client_secret") != "secret-1-SECRETCLIENT" {
					t.Errorf("post: header %v, form %v", tr.HasBasic, f)
				}
			case oauth.AuthNone:
				if tr.HasBasic || f.Get("client_id") != "client-1" || f.Has("client_secret") {
					t.Errorf("none: header %v, form %v", tr.HasBasic, f)
				}
			}
		})
	}
}

// TestPreRegisteredClient: a configured client is used as is: no
// registration, its secret at the token endpoint.
func TestPreRegisteredClient(t *testing.T) {
	as := newAuthServer(t)
	as.metadata = map[string]any{"registration_endpoint": nil, "token_endpoint_auth_methods_supported": []string{"client_secret_basic"}}
	rs := newResourceServer(t, as)
	tr := newTransport()
	tr.Client.ClientID, tr.Client.ClientSecret = "pre-registered", "pre-SECRET"
	if status, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("got %d, %v", status, err)
	}
	tok := as.tokens()[0]
	if len(as.regs()) != 0 || as.auths()[0].Get("client_id") != "pre-registered" || tok.BasicUser != "pre-registered" || tok.BasicPass != "pre-SECRET" {
		t.Errorf("registrations %d, client_id %q, basic %q", len(as.regs()), as.auths()[0].Get("client_id"), tok.BasicUser)
	}
}

// TestClientIDMetadataDocument: when the server supports Client ID
// Metadata Documents, the document's URL is the client_id and nothing is
// registered; otherwise DCR.
func TestClientIDMetadataDocument(t *testing.T) {
	for _, supported := range []bool{true, false} {
		as := newAuthServer(t)
		as.metadata = map[string]any{"client_id_metadata_document_supported": supported}
		rs := newResourceServer(t, as)
		tr := newTransport()
		tr.Client.ClientIDMetadataURL = "https://client.example.com/metadata.json"
		if status, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`); err != nil || status != http.StatusOK {
			t.Fatalf("supported=%v: got %d, %v", supported, status, err)
		}
		got := as.auths()[0].Get("client_id")
		if supported && (got != "https://client.example.com/metadata.json" || len(as.regs()) != 0) {
			t.Errorf("CIMD supported: client_id %q, %d registrations; want the URL and none", got, len(as.regs()))
		}
		if !supported && (got != "client-1" || len(as.regs()) != 1) {
			t.Errorf("CIMD unsupported: client_id %q, %d registrations; want DCR", got, len(as.regs()))
		}
	}
}

// TestClientCredentialsSecret: the client credentials grant with a secret
// (machine to machine): no user, the resource parameter, the scope.
func TestClientCredentialsSecret(t *testing.T) {
	as := newAuthServer(t)
	rs := newResourceServer(t, as)
	rs.challengeScope = []string{"mcp:tools"}
	tr := &oauth.Transport{
		Store:  oauth.NewMemoryStore(),
		Grant:  oauth.GrantClientCredentials,
		Client: oauth.ClientConfig{ClientID: "machine", ClientSecret: "machine-SECRET"},
	}
	if status, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("got %d, %v", status, err)
	}
	toks := as.tokens()
	if len(toks) != 1 || toks[0].Grant != "client_credentials" || toks[0].BasicUser != "machine" || toks[0].BasicPass != "machine-SECRET" {
		t.Fatalf("token requests = %+v", toks)
	}
	if f := toks[0].Form; f.Get("resource") != rs.mcpURL() || f.Get("scope") != "mcp:tools" {
		t.Errorf("form = %v, want resource and scope", f)
	}
	if len(as.auths()) != 0 {
		t.Errorf("client credentials went to the authorization endpoint")
	}
}

// TestClientCredentialsJWT: private_key_jwt: the token request carries a
// JWT assertion signed with the client's key (ES256), whose iss and sub
// are the client_id and whose aud is the issuer (RFC 7523).
func TestClientCredentialsJWT(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	as := newAuthServer(t)
	as.metadata = map[string]any{"token_endpoint_auth_methods_supported": []string{"private_key_jwt"}}
	rs := newResourceServer(t, as)
	tr := &oauth.Transport{
		Store:  oauth.NewMemoryStore(),
		Grant:  oauth.GrantClientCredentials,
		Client: oauth.ClientConfig{ClientID: "workload", PrivateKey: key, KeyID: "k1"},
	}
	if status, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("got %d, %v", status, err)
	}
	f := as.tokens()[0].Form
	if f.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
		t.Fatalf("client_assertion_type = %q", f.Get("client_assertion_type"))
	}
	header, claims := verifyES256(t, f.Get("client_assertion"), &key.PublicKey)
	if header["alg"] != "ES256" || header["kid"] != "k1" {
		t.Errorf("header = %v", header)
	}
	if claims["iss"] != "workload" || claims["sub"] != "workload" || claims["aud"] != as.issuer() || claims["jti"] == "" {
		t.Errorf("claims = %v, want iss and sub workload, aud %s, a jti", claims, as.issuer())
	}
	if exp, _ := claims["exp"].(float64); time.Unix(int64(exp), 0).Before(time.Now()) {
		t.Errorf("exp %v is in the past", claims["exp"])
	}
}

// verifyES256 checks a compact JWS signed with pub and returns its header
// and claims.
func verifyES256(t *testing.T, jws string, pub *ecdsa.PublicKey) (header, claims map[string]any) {
	t.Helper()
	parts := strings.Split(jws, ".")
	if len(parts) != 3 {
		t.Fatalf("assertion %q is not a compact JWS", jws)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		t.Fatalf("signature: %d bytes, %v", len(sig), err)
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	if !ecdsa.Verify(pub, digest[:], r, s) {
		t.Fatal("the assertion's signature does not verify")
	}
	for i, v := range []*map[string]any{&header, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	return header, claims
}
