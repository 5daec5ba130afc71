package api

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
	return "", fmt.Errorf("api: unknown role %q (want admin, operator or viewer)", s)
}

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

// ErrTokenNotFound is returned by a [TokenStore] for a token it does not
// hold.
var ErrTokenNotFound = errors.New("api: no such token")

// TokenStore keeps API tokens; sqlstore implements it. Implementations must
// be safe for concurrent use.
type TokenStore interface {
	// TokenCreate stores a new token. Its ID and Hash are unique.
	TokenCreate(ctx context.Context, t *Token) error
	// TokenByHash returns the token whose Hash is hash, revoked or not, or
	// ErrTokenNotFound.
	TokenByHash(ctx context.Context, hash []byte) (*Token, error)
	// TokenList returns every token, revoked ones included, oldest first.
	TokenList(ctx context.Context) ([]*Token, error)
	// TokenRevoke sets the token's RevokedAt to at, unless it is revoked
	// already (the first revocation stands); ErrTokenNotFound if there is
	// no such token.
	TokenRevoke(ctx context.Context, id string, at time.Time) error
	// TokenTouch sets the token's LastUsedAt to at.
	TokenTouch(ctx context.Context, id string, at time.Time) error
}

// tokenPrefix starts every token's secret, so that a leaked one is easy to
// recognise (by a secret scanner, or by a person).
const tokenPrefix = "andon_"

// HashToken returns the hash a [TokenStore] keeps of a token's secret.
//
// A plain SHA-256 is enough: the secret is 256 random bits, not a password
// a person chose, so there is no dictionary to try and a slow hash (bcrypt,
// argon2) would add cost to every request and no strength. The hash is what
// a stolen database yields, and it cannot be turned back into a token.
func HashToken(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

// NewToken makes a token for name with role: the secret to hand to its user
// once (it is not kept anywhere) and the [Token] to store.
func NewToken(name string, role Role, now time.Time) (secret string, t *Token, err error) {
	if err := checkTokenName(name); err != nil {
		return "", nil, err
	}
	if role.rank() == 0 {
		return "", nil, fmt.Errorf("api: unknown role %q (want admin, operator or viewer)", role)
	}
	raw := make([]byte, 32)
	rand.Read(raw) // never fails (crypto/rand)
	id := make([]byte, 8)
	rand.Read(id)
	secret = tokenPrefix + base64.RawURLEncoding.EncodeToString(raw)
	return secret, &Token{ID: "tok_" + hex.EncodeToString(id), Name: name, Role: role, Hash: HashToken(secret),
		CreatedAt: now.UTC()}, nil
}

// CreateToken makes a token with [NewToken] and stores it. It returns the
// secret, which is not kept anywhere: show it to its user once.
func CreateToken(ctx context.Context, store TokenStore, name string, role Role) (secret string, t *Token, err error) {
	secret, t, err = NewToken(name, role, time.Now())
	if err != nil {
		return "", nil, err
	}
	if err := store.TokenCreate(ctx, t); err != nil {
		return "", nil, fmt.Errorf("api: storing the token: %w", err)
	}
	return secret, t, nil
}

// checkTokenName accepts the names an identity may have: what a run's owner
// column, a log line and a terminal show without surprise.
func checkTokenName(name string) error {
	if name == "" || len(name) > 64 {
		return errors.New("api: a token name is 1 to 64 characters")
	}
	for _, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._@-", c)
		if !ok {
			return fmt.Errorf("api: a token name has only letters, digits and . _ @ -; not %q", c)
		}
	}
	return nil
}
