package catalogue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"golang.org/x/oauth2"

	"github.com/andonhq/andon/mcp/oauth"
	"github.com/andonhq/andon/vault"
)

// OAuthVault keeps OAuth tokens and client registrations sealed: a
// [*vault.Vault] satisfies it.
type OAuthVault interface {
	OAuthGet(ctx context.Context, ref vault.OAuthRef, host string) ([]byte, error)
	OAuthSet(ctx context.Context, ref vault.OAuthRef, value []byte, hosts []string) error
	OAuthDelete(ctx context.Context, ref vault.OAuthRef) error
	OAuthList(ctx context.Context, kind vault.OAuthKind, resource string) ([]vault.OAuthInfo, error)
}

// storeWriteTimeout bounds one write of a token or registration. The write
// runs detached from the caller's cancellation: a token the server issued
// is stored even if the call that asked for it was cancelled meanwhile,
// since the server may have retired the token it replaces.
const storeWriteTimeout = 10 * time.Second

// tokenStore is the [oauth.TokenStore] of one server: the vault, handing a
// token only to the server's own host, as the vault record binds it.
type tokenStore struct {
	v      OAuthVault
	server string
	host   string // the server's URL host, normalised
}

func newTokenStore(v OAuthVault, s Server) (*tokenStore, error) {
	hosts, err := vault.OAuthHosts(s.URL)
	if err != nil {
		return nil, fmt.Errorf("catalogue: server %q: %w", s.Name, err)
	}
	return &tokenStore{v: v, server: s.Name, host: hosts[0]}, nil
}

// storedToken is a token as the vault seals it.
type storedToken struct {
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	Scope        string    `json:"scope,omitempty"`
}

// resourceHost is the host a token for resource may be sent to. A resource
// on another host than the server's is refused: its token must never go
// to the server, nor the server's to it.
func (s *tokenStore) resourceHost(resource string) (string, error) {
	hosts, err := vault.OAuthHosts(resource)
	if err != nil {
		return "", err
	}
	if hosts[0] != s.host {
		return "", fmt.Errorf("catalogue: server %q: a token for a resource on host %q: %w", s.server, hosts[0], vault.ErrHostNotAllowed)
	}
	return hosts[0], nil
}

func (s *tokenStore) Token(ctx context.Context, key oauth.Key) (*oauth2.Token, error) {
	host, err := s.resourceHost(key.Resource)
	if err != nil {
		return nil, err
	}
	raw, err := s.v.OAuthGet(ctx, vault.OAuthRef{Kind: vault.OAuthToken, Issuer: key.Issuer, Resource: key.Resource}, host)
	if errors.Is(err, vault.ErrNotFound) {
		return nil, fmt.Errorf("%w: %w", oauth.ErrNoToken, err)
	}
	if err != nil {
		return nil, err
	}
	defer clear(raw)
	var st storedToken
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("catalogue: server %q: the stored token does not parse: %w", s.server, vault.ErrCorrupt)
	}
	tok := &oauth2.Token{AccessToken: st.AccessToken, TokenType: st.TokenType, RefreshToken: st.RefreshToken, Expiry: st.Expiry}
	if st.Scope != "" {
		tok = tok.WithExtra(map[string]any{"scope": st.Scope})
	}
	return tok, nil
}

func (s *tokenStore) SetToken(ctx context.Context, key oauth.Key, tok *oauth2.Token) error {
	host, err := s.resourceHost(key.Resource)
	if err != nil {
		return err
	}
	st := storedToken{AccessToken: tok.AccessToken, TokenType: tok.TokenType, RefreshToken: tok.RefreshToken, Expiry: tok.Expiry}
	if scope, ok := tok.Extra("scope").(string); ok {
		st.Scope = scope
	}
	raw, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("catalogue: server %q: encoding a token: %w", s.server, err)
	}
	defer clear(raw)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeWriteTimeout)
	defer cancel()
	return s.v.OAuthSet(wctx, vault.OAuthRef{Kind: vault.OAuthToken, Issuer: key.Issuer, Resource: key.Resource}, raw, []string{host})
}

// storedRegistration is a client registration as the vault seals it.
type storedRegistration struct {
	ClientID        string    `json:"client_id"`
	ClientSecret    string    `json:"client_secret,omitempty"`
	AuthMethod      string    `json:"auth_method,omitempty"`
	RedirectURIs    []string  `json:"redirect_uris,omitempty"`
	SecretExpiresAt time.Time `json:"secret_expires_at,omitzero"`
}

func issuerHost(issuer string) (string, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Hostname() == "" {
		return "", fmt.Errorf("%w: an issuer without a host", vault.ErrInvalid)
	}
	return vault.NormalizeHost(u.Hostname()), nil
}

func (s *tokenStore) Registration(ctx context.Context, issuer string) (*oauth.Registration, error) {
	host, err := issuerHost(issuer)
	if err != nil {
		return nil, err
	}
	raw, err := s.v.OAuthGet(ctx, vault.OAuthRef{Kind: vault.OAuthClient, Issuer: issuer}, host)
	if errors.Is(err, vault.ErrNotFound) {
		return nil, fmt.Errorf("%w: %w", oauth.ErrNoRegistration, err)
	}
	if err != nil {
		return nil, err
	}
	defer clear(raw)
	var r storedRegistration
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("catalogue: the stored client registration does not parse: %w", vault.ErrCorrupt)
	}
	return &oauth.Registration{ClientID: r.ClientID, ClientSecret: r.ClientSecret, AuthMethod: oauth.AuthMethod(r.AuthMethod),
		RedirectURIs: r.RedirectURIs, SecretExpiresAt: r.SecretExpiresAt}, nil
}

func (s *tokenStore) SetRegistration(ctx context.Context, issuer string, r *oauth.Registration) error {
	host, err := issuerHost(issuer)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(storedRegistration{ClientID: r.ClientID, ClientSecret: r.ClientSecret, AuthMethod: string(r.AuthMethod),
		RedirectURIs: r.RedirectURIs, SecretExpiresAt: r.SecretExpiresAt})
	if err != nil {
		return fmt.Errorf("catalogue: encoding a client registration: %w", err)
	}
	defer clear(raw)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeWriteTimeout)
	defer cancel()
	return s.v.OAuthSet(wctx, vault.OAuthRef{Kind: vault.OAuthClient, Issuer: issuer}, raw, []string{host})
}
