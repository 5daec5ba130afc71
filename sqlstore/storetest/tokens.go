package storetest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/andonhq/andon/api"
)

// ExerciseTokens runs the suite of api.TokenStore. newStore returns a fresh,
// empty store for one test and arranges its cleanup. Times in the suite are
// whole milliseconds.
func ExerciseTokens(t *testing.T, newStore func(t *testing.T) api.TokenStore) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s api.TokenStore)
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

func token(id, name string, role api.Role, created time.Time) *api.Token {
	sum := sha256.Sum256([]byte("secret of " + id))
	return &api.Token{ID: id, Name: name, Role: role, Hash: sum[:], CreatedAt: created}
}

func checkToken(t *testing.T, got, want *api.Token) {
	t.Helper()
	if got.ID != want.ID || got.Name != want.Name || got.Role != want.Role || !bytes.Equal(got.Hash, want.Hash) ||
		!got.CreatedAt.Equal(want.CreatedAt) || !got.LastUsedAt.Equal(want.LastUsedAt) || !got.RevokedAt.Equal(want.RevokedAt) {
		t.Errorf("token = %+v, want %+v", got, want)
	}
}

func testTokenRoundTrip(t *testing.T, s api.TokenStore) {
	ctx := t.Context()
	want := token("tok_1", "alice", api.RoleOperator, tokenEpoch)
	want.LastUsedAt = tokenEpoch.Add(time.Second)
	if err := s.TokenCreate(ctx, want); err != nil {
		t.Fatal(err)
	}
	for _, w := range []*api.Token{token("tok_2", "bob", api.RoleViewer, tokenEpoch), token("tok_3", "root", api.RoleAdmin, tokenEpoch)} {
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

func testTokenUnknownHash(t *testing.T, s api.TokenStore) {
	if err := s.TokenCreate(t.Context(), token("tok_1", "alice", api.RoleAdmin, tokenEpoch)); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("another secret"))
	if _, err := s.TokenByHash(t.Context(), sum[:]); !errors.Is(err, api.ErrTokenNotFound) {
		t.Fatalf("TokenByHash(unknown) = %v, want api.ErrTokenNotFound", err)
	}
}

func testTokenUnique(t *testing.T, s api.TokenStore) {
	ctx := t.Context()
	first := token("tok_1", "alice", api.RoleAdmin, tokenEpoch)
	if err := s.TokenCreate(ctx, first); err != nil {
		t.Fatal(err)
	}
	sameID := token("tok_1", "bob", api.RoleViewer, tokenEpoch)
	sameID.Hash = bytes.Repeat([]byte{1}, 32)
	if err := s.TokenCreate(ctx, sameID); err == nil {
		t.Error("a second token with the same id was stored")
	}
	sameHash := token("tok_2", "bob", api.RoleViewer, tokenEpoch)
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

func testTokenBadRole(t *testing.T, s api.TokenStore) {
	if err := s.TokenCreate(t.Context(), token("tok_1", "alice", "superuser", tokenEpoch)); err == nil {
		t.Fatal("a token with role superuser was stored")
	}
}

func testTokenList(t *testing.T, s api.TokenStore) {
	ctx := t.Context()
	if list, err := s.TokenList(ctx); err != nil || len(list) != 0 {
		t.Fatalf("TokenList of an empty store = %v, %v; want none", list, err)
	}
	// Created out of order; listed by creation time.
	want := []*api.Token{
		token("tok_a", "alice", api.RoleAdmin, tokenEpoch),
		token("tok_c", "carol", api.RoleViewer, tokenEpoch.Add(time.Millisecond)),
		token("tok_b", "bob", api.RoleOperator, tokenEpoch.Add(2*time.Millisecond)),
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

func testTokenRevoke(t *testing.T, s api.TokenStore) {
	ctx := t.Context()
	tok := token("tok_1", "alice", api.RoleOperator, tokenEpoch)
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

func testTokenRevokeUnknown(t *testing.T, s api.TokenStore) {
	if err := s.TokenRevoke(t.Context(), "tok_nope", tokenEpoch); !errors.Is(err, api.ErrTokenNotFound) {
		t.Fatalf("TokenRevoke(unknown) = %v, want api.ErrTokenNotFound", err)
	}
}

func testTokenTouch(t *testing.T, s api.TokenStore) {
	ctx := t.Context()
	tok := token("tok_1", "alice", api.RoleViewer, tokenEpoch)
	other := token("tok_2", "bob", api.RoleViewer, tokenEpoch)
	for _, x := range []*api.Token{tok, other} {
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
