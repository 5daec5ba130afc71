package oauth

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// ErrNoToken is returned by [TokenStore].Token when the store holds no
// token for the key.
var ErrNoToken = errors.New("oauth: no token stored")

// ErrNoRegistration is returned by [TokenStore].Registration when the store
// holds no client registration for the issuer.
var ErrNoRegistration = errors.New("oauth: no client registration stored")

// Key names a token: the authorization server that issued it and the
// resource (the MCP server's canonical URI, RFC 8707) it was issued for. A
// token is never sent to another resource, and a new authorization server
// for a resource means a new key (SEP-2352).
type Key struct {
	Issuer   string // the authorization server's issuer identifier
	Resource string // the protected resource's identifier
}

// Registration is a client registration at one authorization server: what
// Dynamic Client Registration returned, or a pre-registered client.
type Registration struct {
	ClientID     string
	ClientSecret string // empty for a public client
	// AuthMethod is the token endpoint authentication method the client
	// registered with.
	AuthMethod AuthMethod
	// RedirectURIs are the redirect URIs registered.
	RedirectURIs []string
	// SecretExpiresAt is when the client secret expires; zero for never.
	SecretExpiresAt time.Time
}

// TokenStore keeps tokens and client registrations. Implementations must be
// safe for concurrent use. The Transport calls SetToken only with a
// complete token (an access token, and the refresh token the server issued
// or the one it replaces), so a store never holds half of a refresh.
type TokenStore interface {
	// Token returns the token stored for key, or an error wrapping
	// ErrNoToken.
	Token(ctx context.Context, key Key) (*oauth2.Token, error)
	// SetToken stores tok for key, replacing any earlier token.
	SetToken(ctx context.Context, key Key, tok *oauth2.Token) error
	// Registration returns the client registration stored for the
	// authorization server issuer, or an error wrapping ErrNoRegistration.
	Registration(ctx context.Context, issuer string) (*Registration, error)
	// SetRegistration stores r for issuer.
	SetRegistration(ctx context.Context, issuer string, r *Registration) error
}

// MemoryStore is a TokenStore in memory, for tests and short-lived
// programs. The zero value is ready to use.
type MemoryStore struct {
	mu     sync.Mutex
	tokens map[Key]*oauth2.Token
	regs   map[string]*Registration
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{} }

// Token implements TokenStore.
func (s *MemoryStore) Token(ctx context.Context, key Key) (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tok, ok := s.tokens[key]
	if !ok {
		return nil, ErrNoToken
	}
	c := *tok
	return &c, nil
}

// SetToken implements TokenStore.
func (s *MemoryStore) SetToken(ctx context.Context, key Key, tok *oauth2.Token) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tokens == nil {
		s.tokens = make(map[Key]*oauth2.Token)
	}
	c := *tok
	s.tokens[key] = &c
	return nil
}

// Registration implements TokenStore.
func (s *MemoryStore) Registration(ctx context.Context, issuer string) (*Registration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.regs[issuer]
	if !ok {
		return nil, ErrNoRegistration
	}
	c := *r
	return &c, nil
}

// SetRegistration implements TokenStore.
func (s *MemoryStore) SetRegistration(ctx context.Context, issuer string, r *Registration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.regs == nil {
		s.regs = make(map[string]*Registration)
	}
	c := *r
	s.regs[issuer] = &c
	return nil
}
