// Package token holds andon's API tokens and roles: what a token is, what
// its role lets it do, how one is made and how its secret is hashed for
// storage. The HTTP API authenticates with them (package api), the store
// keeps them (package sqlstore), and `andon token` manages them; none of
// them needs the others to do so.
package token

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Role is what a token may do. Each role may do everything the one below it
// may: viewer < operator < admin.
type Role string

// The roles.
const (
	// RoleViewer may read: runs, steps, audit rows, servers, tools, the
	// event stream and the metrics.
	RoleViewer Role = "viewer"
	// RoleOperator may also start runs, and cancel, approve or deny the
	// runs it owns.
	RoleOperator Role = "operator"
	// RoleAdmin may do everything, to anyone's run, and change servers
	// and tools.
	RoleAdmin Role = "admin"
)

// ParseRole returns the role s names.
func ParseRole(s string) (Role, error) {
	switch r := Role(s); r {
	case RoleViewer, RoleOperator, RoleAdmin:
		return r, nil
	}
	return "", fmt.Errorf("token: unknown role %q (want admin, operator or viewer)", s)
}

// AtLeast reports whether r may do what least may. Every role is at least
// the empty role, which stands for "anyone"; no role but a known one is at
// least a known one.
func (r Role) AtLeast(least Role) bool { return r.rank() >= least.rank() }

// rank orders the roles; 0 is no role at all.
func (r Role) rank() int {
	switch r {
	case RoleViewer:
		return 1
	case RoleOperator:
		return 2
	case RoleAdmin:
		return 3
	}
	return 0
}

// Token is an API token as stored: its identity, never its secret. The
// token's Name is who its requests act as: the runs it starts are owned by
// that name, and an operator may act on the runs of that name only.
type Token struct {
	// ID identifies the token (tok_…) in lists, revocations and audit
	// rows. It is not secret.
	ID string
	// Name is the identity the token acts as.
	Name string
	// Role is what it may do.
	Role Role
	// Hash is the SHA-256 of the token's secret: all the store keeps of
	// it.
	Hash []byte
	// CreatedAt is when the token was made.
	CreatedAt time.Time
	// LastUsedAt is when it last authenticated a request, to the minute;
	// zero if never.
	LastUsedAt time.Time
	// RevokedAt is when it was revoked; zero while it is valid.
	RevokedAt time.Time
}

// ErrNotFound is returned by a [Store] for a token it does not hold.
var ErrNotFound = errors.New("token: no such token")

// Store keeps API tokens; sqlstore implements it. Implementations must be
// safe for concurrent use.
type Store interface {
	// TokenCreate stores a new token. Its ID and Hash are unique.
	TokenCreate(ctx context.Context, t *Token) error
	// TokenByHash returns the token whose Hash is hash, revoked or not, or
	// ErrNotFound.
	TokenByHash(ctx context.Context, hash []byte) (*Token, error)
	// TokenList returns every token, revoked ones included, oldest first.
	TokenList(ctx context.Context) ([]*Token, error)
	// TokenRevoke sets the token's RevokedAt to at, unless it is revoked
	// already (the first revocation stands); ErrNotFound if there is no
	// such token.
	TokenRevoke(ctx context.Context, id string, at time.Time) error
	// TokenTouch sets the token's LastUsedAt to at.
	TokenTouch(ctx context.Context, id string, at time.Time) error
}

// Prefix starts every token's secret, so that a leaked one is easy to
// recognise (by a secret scanner, or by a person), and a string without it
// is known not to be a token without a look-up.
const Prefix = "andon_"

// Hash returns the hash a [Store] keeps of a token's secret.
//
// A plain SHA-256 is enough: the secret is 256 random bits, not a password
// a person chose, so there is no dictionary to try and a slow hash (bcrypt,
// argon2) would add cost to every request and no strength. The hash is what
// a stolen database yields, and it cannot be turned back into a token.
func Hash(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

// New makes a token for name with role: the secret to hand to its user
// once (it is not kept anywhere) and the [Token] to store.
func New(name string, role Role, now time.Time) (secret string, t *Token, err error) {
	if err := checkName(name); err != nil {
		return "", nil, err
	}
	if role.rank() == 0 {
		return "", nil, fmt.Errorf("token: unknown role %q (want admin, operator or viewer)", role)
	}
	raw := make([]byte, 32)
	rand.Read(raw) // never fails (crypto/rand)
	id := make([]byte, 8)
	rand.Read(id)
	secret = Prefix + base64.RawURLEncoding.EncodeToString(raw)
	return secret, &Token{ID: "tok_" + hex.EncodeToString(id), Name: name, Role: role, Hash: Hash(secret),
		CreatedAt: now.UTC()}, nil
}

// Create makes a token with [New] and stores it. It returns the secret,
// which is not kept anywhere: show it to its user once.
func Create(ctx context.Context, store Store, name string, role Role) (secret string, t *Token, err error) {
	secret, t, err = New(name, role, time.Now())
	if err != nil {
		return "", nil, err
	}
	if err := store.TokenCreate(ctx, t); err != nil {
		return "", nil, fmt.Errorf("token: storing the token: %w", err)
	}
	return secret, t, nil
}

// checkName accepts the names an identity may have: what a run's owner
// column, a log line and a terminal show without surprise.
func checkName(name string) error {
	if name == "" || len(name) > 64 {
		return errors.New("token: a token name is 1 to 64 characters")
	}
	for _, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._@-", c)
		if !ok {
			return fmt.Errorf("token: a token name has only letters, digits and . _ @ -; not %q", c)
		}
	}
	return nil
}
