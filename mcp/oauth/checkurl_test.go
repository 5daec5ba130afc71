package oauth_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/andonhq/andon/mcp/oauth"
)

// spyStore is a MemoryStore that counts the reads of client registrations
// (where a client secret lives).
type spyStore struct {
	oauth.MemoryStore
	regReads atomic.Int32
}

func (s *spyStore) Registration(ctx context.Context, issuer string) (*oauth.Registration, error) {
	s.regReads.Add(1)
	return s.MemoryStore.Registration(ctx, issuer)
}

var _ oauth.TokenStore = (*spyStore)(nil)

// TestMetadataURLRefusedBeforeSecret: a metadata document pointing the
// token endpoint at a private address is refused, by the default check and
// by a caller's CheckURL, before any client secret is read and before any
// request goes there.
func TestMetadataURLRefusedBeforeSecret(t *testing.T) {
	tests := []struct {
		name     string
		endpoint string
		check    func(context.Context, *url.URL) error
	}{
		{name: "default check, private address", endpoint: "http://10.20.30.40/token"},
		{name: "caller's check, loopback outside the allowlist", endpoint: "http://127.0.0.1:1/token", check: func(ctx context.Context, u *url.URL) error {
			if u.Port() == "1" {
				return fmt.Errorf("%s is not allowed", u.Host)
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := newAuthServer(t)
			as.metadata = map[string]any{"token_endpoint": tt.endpoint}
			rs := newResourceServer(t, as)
			store := &spyStore{}
			store.SetRegistration(context.Background(), as.issuer(), &oauth.Registration{ClientID: "c", ClientSecret: "stored-SECRET", AuthMethod: oauth.AuthClientSecretBasic})
			tr := newTransport()
			tr.Store, tr.CheckURL = store, tt.check
			_, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`)
			if !errors.Is(err, oauth.ErrURLRefused) {
				t.Fatalf("err = %v, want ErrURLRefused", err)
			}
			if n := store.regReads.Load(); n != 0 {
				t.Errorf("the client registration (and its secret) was read %d times before the refusal", n)
			}
			if len(as.auths()) != 0 || len(as.regs()) != 0 {
				t.Errorf("the authorization server saw %d authorization requests, %d registrations", len(as.auths()), len(as.regs()))
			}
		})
	}
}

// TestResourceMetadataURLRefused: a resource_metadata URL that fails the
// check is never fetched, and discovery stops there.
func TestResourceMetadataURLRefused(t *testing.T) {
	as := newAuthServer(t)
	rs := newResourceServer(t, as)
	var checked []string
	tr := newTransport()
	tr.CheckURL = func(ctx context.Context, u *url.URL) error {
		checked = append(checked, u.String())
		return errors.New("no")
	}
	_, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`)
	if !errors.Is(err, oauth.ErrURLRefused) {
		t.Fatalf("err = %v, want ErrURLRefused", err)
	}
	if len(checked) != 1 || checked[0] != rs.prmURL() {
		t.Errorf("checked %q, want the resource_metadata URL only", checked)
	}
	if len(as.getPaths()) != 0 {
		t.Errorf("the authorization server was contacted: %q", as.getPaths())
	}
}

// TestAuthorizationServerMigration: when the resource's metadata names a
// new authorization server, the client registers there anew and never
// presents the old server's client_id (SEP-2352).
func TestAuthorizationServerMigration(t *testing.T) {
	as1, as2 := newAuthServer(t), newAuthServer(t)
	as1.idPrefix = "as1-client-"
	rs := newResourceServer(t, as1)
	tr := newTransport()
	if _, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`); err != nil {
		t.Fatal(err)
	}
	rs.as = as2 // the PRM now names as2, and only its tokens are valid
	if status, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`); err != nil || status != 200 {
		t.Fatalf("after migration: %d, %v", status, err)
	}
	if len(as1.regs()) != 1 || len(as2.regs()) != 1 {
		t.Errorf("registrations: %d at the old server, %d at the new, want 1 each", len(as1.regs()), len(as2.regs()))
	}
	for _, q := range as2.auths() {
		if strings.HasPrefix(q.Get("client_id"), "as1-") {
			t.Errorf("the old server's client_id %q went to the new server's authorization endpoint", q.Get("client_id"))
		}
	}
	for _, tok := range as2.tokens() {
		if strings.HasPrefix(tok.BasicUser, "as1-") || strings.HasPrefix(tok.Form.Get("client_id"), "as1-") {
			t.Errorf("the old server's client_id went to the new server's token endpoint")
		}
	}
	key := oauth.Key{Issuer: as2.issuer(), Resource: rs.mcpURL()}
	if _, err := tr.Store.Token(context.Background(), key); err != nil {
		t.Errorf("no token stored under the new issuer: %v", err)
	}
}
