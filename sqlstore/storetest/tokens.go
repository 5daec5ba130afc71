package storetest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/andonhq/andon/token"
)

// ExerciseTokens runs the suite of token.Store. newStore returns a fresh,
// empty store for one test and arranges its cleanup. Times in the suite are
// whole milliseconds.
func ExerciseTokens(t *testing.T, newStore func(t *testing.T) token.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s token.Store)
	}{
		{"ATokenIsFoundByItsHashWithEveryField", testTokenRoundTrip},
		{"AnUnknownHashIsNotFound", testTokenUnknownHash},
		{"IDsAndHashesAreUnique", testTokenUnique},
		{"AnUnknownRoleIsRefused", testTokenBadRole},
		{"ListHasEveryTokenOldestFirst", testTokenList},
		{"RevokeKeepsTheFirstRevocation", testTokenRevoke},
		{"RevokingAnUnknownTokenIsNotFound", testTokenRevokeUnknown},
		{"TouchRecordsTheLastUse", testTokenTouch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newStore(t))
		})
	}
}

var tokenEpoch = time.UnixMilli(1_800_000_000_000).UTC()

func makeToken(id, name string, role token.Role, created time.Time) *token.Token {
	sum := sha256.Sum256([]byte("secret of " + id))
	return &token.Token{ID: id, Name: name, Role: role, Hash: sum[:], CreatedAt: created}
}

func checkToken(t *testing.T, got, want *token.Token) {
	t.Helper()
	if got.ID != want.ID || got.Name != want.Name || got.Role != want.Role || !bytes.Equal(got.Hash, want.Hash) ||
		!got.CreatedAt.Equal(want.CreatedAt) || !got.LastUsedAt.Equal(want.LastUsedAt) || !got.RevokedAt.Equal(want.RevokedAt) {
		t.Errorf("token = %+v, want %+v", got, want)
	}
}

func testTokenRoundTrip(t *testing.T, s token.Store) {
	ctx := t.Context()
	want := makeToken("tok_1", "alice", token.RoleOperator, tokenEpoch)
	want.LastUsedAt = tokenEpoch.Add(time.Second)
	if err := s.TokenCreate(ctx, want); err != nil {
		t.Fatal(err)
	}
	for _, w := range []*token.Token{makeToken("tok_2", "bob", token.RoleViewer, tokenEpoch), makeToken("tok_3", "root", token.RoleAdmin, tokenEpoch)} {
		if err := s.TokenCreate(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.TokenByHash(ctx, want.Hash)
	if err != nil {
		t.Fatal(err)
	}
	checkToken(t, got, want)
	if !got.RevokedAt.IsZero() {
		t.Errorf("a new token has RevokedAt %v, want zero", got.RevokedAt)
	}
}

func testTokenUnknownHash(t *testing.T, s token.Store) {
	if err := s.TokenCreate(t.Context(), makeToken("tok_1", "alice", token.RoleAdmin, tokenEpoch)); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("another secret"))
	if _, err := s.TokenByHash(t.Context(), sum[:]); !errors.Is(err, token.ErrNotFound) {
		t.Fatalf("TokenByHash(unknown) = %v, want token.ErrNotFound", err)
	}
}

func testTokenUnique(t *testing.T, s token.Store) {
	ctx := t.Context()
	first := makeToken("tok_1", "alice", token.RoleAdmin, tokenEpoch)
	if err := s.TokenCreate(ctx, first); err != nil {
		t.Fatal(err)
	}
	sameID := makeToken("tok_1", "bob", token.RoleViewer, tokenEpoch)
	sameID.Hash = bytes.Repeat([]byte{1}, 32)
	if err := s.TokenCreate(ctx, sameID); err == nil {
		t.Error("a second token with the same id was stored")
	}
	sameHash := makeToken("tok_2", "bob", token.RoleViewer, tokenEpoch)
	sameHash.Hash = first.Hash
	if err := s.TokenCreate(ctx, sameHash); err == nil {
		t.Error("a second token with the same hash was stored")
	}
	list, err := s.TokenList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Fatalf("TokenList has %d tokens after refused duplicates, want 1", len(list))
	}
	checkToken(t, list[0], first)
}

func testTokenBadRole(t *testing.T, s token.Store) {
	if err := s.TokenCreate(t.Context(), makeToken("tok_1", "alice", "superuser", tokenEpoch)); err == nil {
		t.Fatal("a token with role superuser was stored")
	}
}

func testTokenList(t *testing.T, s token.Store) {
	ctx := t.Context()
	if list, err := s.TokenList(ctx); err != nil || len(list) != 0 {
		t.Fatalf("TokenList of an empty store = %v, %v; want none", list, err)
	}
	// Created out of order; listed by creation time.
	want := []*token.Token{
		makeToken("tok_a", "alice", token.RoleAdmin, tokenEpoch),
		makeToken("tok_c", "carol", token.RoleViewer, tokenEpoch.Add(time.Millisecond)),
		makeToken("tok_b", "bob", token.RoleOperator, tokenEpoch.Add(2*time.Millisecond)),
	}
	for _, i := range []int{2, 0, 1} {
		if err := s.TokenCreate(ctx, want[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.TokenRevoke(ctx, "tok_c", tokenEpoch.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	want[1].RevokedAt = tokenEpoch.Add(time.Hour)
	got, err := s.TokenList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("TokenList has %d tokens, want %d (revoked ones included)", len(got), len(want))
	}
	for i := range want {
		checkToken(t, got[i], want[i])
	}
}

func testTokenRevoke(t *testing.T, s token.Store) {
	ctx := t.Context()
	tok := makeToken("tok_1", "alice", token.RoleOperator, tokenEpoch)
	if err := s.TokenCreate(ctx, tok); err != nil {
		t.Fatal(err)
	}
	first := tokenEpoch.Add(time.Minute)
	if err := s.TokenRevoke(ctx, tok.ID, first); err != nil {
		t.Fatal(err)
	}
	if err := s.TokenRevoke(ctx, tok.ID, first.Add(time.Hour)); err != nil {
		t.Fatalf("revoking a revoked token: %v, want nil", err)
	}
	got, err := s.TokenByHash(ctx, tok.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if !got.RevokedAt.Equal(first) {
		t.Errorf("RevokedAt = %v, want the first revocation's %v", got.RevokedAt, first)
	}
}

func testTokenRevokeUnknown(t *testing.T, s token.Store) {
	if err := s.TokenRevoke(t.Context(), "tok_nope", tokenEpoch); !errors.Is(err, token.ErrNotFound) {
		t.Fatalf("TokenRevoke(unknown) = %v, want token.ErrNotFound", err)
	}
}

func testTokenTouch(t *testing.T, s token.Store) {
	ctx := t.Context()
	tok := makeToken("tok_1", "alice", token.RoleViewer, tokenEpoch)
	other := makeToken("tok_2", "bob", token.RoleViewer, tokenEpoch)
	for _, x := range []*token.Token{tok, other} {
		if err := s.TokenCreate(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	used := tokenEpoch.Add(3 * time.Minute)
	if err := s.TokenTouch(ctx, tok.ID, used); err != nil {
		t.Fatal(err)
	}
	got, err := s.TokenByHash(ctx, tok.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if !got.LastUsedAt.Equal(used) {
		t.Errorf("LastUsedAt = %v, want %v", got.LastUsedAt, used)
	}
	if got, _ := s.TokenByHash(ctx, other.Hash); got == nil || !got.LastUsedAt.IsZero() {
		t.Errorf("touching one token changed another: %+v", got)
	}
}
