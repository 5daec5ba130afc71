package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"testing"

	"github.com/andonhq/andon/mcp/oauth"
)

// TestOAuthTransportFromContext: the scenario context's client
// credentials and PKCS #8 key (what auth/client-credentials-jwt hands
// over) configure a private_key_jwt client credentials Transport.
func TestOAuthTransportFromContext(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	e := &env{scenario: "auth/client-credentials-jwt", context: map[string]any{"client_id": "c", "private_key_pem": pemKey}}
	tr, err := e.oauthTransport()
	if err != nil {
		t.Fatal(err)
	}
	if tr.Grant != oauth.GrantClientCredentials || tr.Client.ClientID != "c" || tr.Client.AuthMethod != oauth.AuthPrivateKeyJWT || !key.PublicKey.Equal(tr.Client.PrivateKey.Public()) {
		t.Errorf("Transport = grant %v, client %+v", tr.Grant, tr.Client)
	}

	e = &env{scenario: "auth/pre-registration", context: map[string]any{"client_id": "p", "client_secret": "s"}}
	tr, err = e.oauthTransport()
	if err != nil {
		t.Fatal(err)
	}
	if tr.Grant != oauth.GrantAuthorizationCode || tr.Client.ClientID != "p" || tr.Client.ClientSecret != "s" || tr.Authorize == nil {
		t.Errorf("pre-registration Transport = grant %v, client %+v", tr.Grant, tr.Client)
	}

	e = &env{scenario: "auth/wif-jwt-bearer", context: map[string]any{"client_id": "w", "valid_jwt": "the-workload-jwt"}}
	tr, err = e.oauthTransport()
	if err != nil {
		t.Fatal(err)
	}
	if a, err := tr.Client.Assertion(context.Background(), "iss", "res"); tr.Grant != oauth.GrantJWTBearer || a != "the-workload-jwt" || err != nil {
		t.Errorf("workload identity Transport = grant %v, assertion %q, %v", tr.Grant, a, err)
	}

	e = &env{scenario: "auth/client-credentials-jwt", context: map[string]any{"private_key_pem": "not a key"}}
	if _, err := e.oauthTransport(); err == nil {
		t.Error("a malformed private_key_pem was accepted")
	}
}
