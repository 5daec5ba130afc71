package token_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/token"
)

// A new token's secret carries the prefix secret scanners look for, only
// its hash is in what is stored, and two tokens share neither id nor
// secret.
func TestNewKeepsOnlyTheHash(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.FixedZone("CET", 3600))
	secret, tok, err := token.New("alice@ops", token.RoleOperator, now)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, token.Prefix) || len(secret) <= len(token.Prefix)+40 {
		t.Errorf("secret %q: want %q and at least 256 bits after it", secret, token.Prefix)
	}
	if !bytes.Equal(tok.Hash, token.Hash(secret)) || bytes.Contains(tok.Hash, []byte(secret)) {
		t.Error("the stored hash is not Hash(secret)")
	}
	if !strings.HasPrefix(tok.ID, "tok_") || strings.Contains(secret, strings.TrimPrefix(tok.ID, "tok_")) {
		t.Errorf("id %q: want tok_… unrelated to the secret", tok.ID)
	}
	if tok.Name != "alice@ops" || tok.Role != token.RoleOperator || !tok.CreatedAt.Equal(now) || tok.CreatedAt.Location() != time.UTC {
		t.Errorf("token = %+v", tok)
	}
	secret2, tok2, err := token.New("alice@ops", token.RoleOperator, now)
	if err != nil {
		t.Fatal(err)
	}
	if secret2 == secret || tok2.ID == tok.ID {
		t.Error("two tokens share a secret or an id")
	}
}

// New refuses a name a terminal or an owner column would show with
// surprise, and a role that is not one.
func TestNewRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		name string
		role token.Role
		want string
	}{
		"empty name":   {"", token.RoleViewer, "1 to 64 characters"},
		"long name":    {strings.Repeat("a", 65), token.RoleViewer, "1 to 64 characters"},
		"space":        {"bob smith", token.RoleViewer, "not ' '"},
		"control":      {"bob\x1b[2J", token.RoleViewer, `not '\x1b'`},
		"unknown role": {"bob", "root", `unknown role "root"`},
		"no role":      {"bob", "", `unknown role ""`},
	} {
		t.Run(name, func(t *testing.T) {
			secret, tok, err := token.New(tc.name, tc.role, time.Now())
			if err == nil || !strings.Contains(err.Error(), tc.want) || secret != "" || tok != nil {
				t.Fatalf("New(%q, %q) = %q, %v, %v; want an error saying %q", tc.name, tc.role, secret, tok, err, tc.want)
			}
		})
	}
}

// Each role may do what the ones below it may, and nothing above; any role
// passes where anyone may go; an unknown one passes nowhere else.
func TestRoleAtLeast(t *testing.T) {
	order := []token.Role{"", token.RoleViewer, token.RoleOperator, token.RoleAdmin}
	for i, r := range order {
		for j, least := range order {
			if got := r.AtLeast(least); got != (i >= j) {
				t.Errorf("%q.AtLeast(%q) = %v", r, least, got)
			}
		}
	}
	if token.Role("root").AtLeast(token.RoleViewer) {
		t.Error("an unknown role is at least viewer")
	}
}

func TestParseRole(t *testing.T) {
	for _, r := range []token.Role{token.RoleViewer, token.RoleOperator, token.RoleAdmin} {
		if got, err := token.ParseRole(string(r)); got != r || err != nil {
			t.Errorf("ParseRole(%q) = %q, %v", r, got, err)
		}
	}
	for _, s := range []string{"", "Admin", "root"} {
		if _, err := token.ParseRole(s); err == nil {
			t.Errorf("ParseRole(%q) accepted it", s)
		}
	}
}
