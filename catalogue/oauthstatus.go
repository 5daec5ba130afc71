package catalogue

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/andonhq/andon/mcp/oauth"
	"github.com/andonhq/andon/vault"
)

// OAuthLogin describes a token the vault holds for a server, without the
// token.
type OAuthLogin struct {
	// Issuer is the authorization server that issued it; Resource the
	// resource it is for.
	Issuer, Resource string
	// Expiry is when the access token expires; zero if it did not say.
	Expiry time.Time
	// Refreshable reports that a refresh token is held beside it.
	Refreshable bool
	// Scopes are those the authorization server granted, if it said.
	Scopes []string
	// UpdatedAt is when it was stored.
	UpdatedAt time.Time
}

// OAuthLogins describes the tokens the vault holds for s: those for a
// resource on its host (where the vault would send them).
func OAuthLogins(ctx context.Context, v OAuthVault, s Server) ([]OAuthLogin, error) {
	store, err := newTokenStore(v, s)
	if err != nil {
		return nil, err
	}
	infos, err := v.OAuthList(ctx, vault.OAuthToken, "")
	if err != nil {
		return nil, err
	}
	var out []OAuthLogin
	for _, info := range infos {
		if _, err := store.resourceHost(info.Resource); err != nil {
			continue // another server's
		}
		tok, err := store.Token(ctx, oauth.Key{Issuer: info.Issuer, Resource: info.Resource})
		if err != nil {
			return nil, err
		}
		l := OAuthLogin{Issuer: info.Issuer, Resource: info.Resource, Expiry: tok.Expiry, Refreshable: tok.RefreshToken != "", UpdatedAt: info.UpdatedAt}
		if scope, ok := tok.Extra("scope").(string); ok {
			l.Scopes = strings.Fields(scope)
		}
		out = append(out, l)
	}
	return out, nil
}

// OAuthLogout removes every token the vault holds for s and returns how
// many it removed. The client registrations stay: they are the
// authorization server's, not a login.
func OAuthLogout(ctx context.Context, v OAuthVault, s Server) (int, error) {
	logins, err := OAuthLogins(ctx, v, s)
	if err != nil {
		return 0, err
	}
	for i, l := range logins {
		if err := v.OAuthDelete(ctx, vault.OAuthRef{Kind: vault.OAuthToken, Issuer: l.Issuer, Resource: l.Resource}); err != nil {
			return i, fmt.Errorf("catalogue: server %q: %w", s.Name, err)
		}
	}
	return len(logins), nil
}
