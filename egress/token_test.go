package egress_test

import (
	"context"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/egress"
)

const tokenForm = "grant_type=refresh_token&refresh_token=rt-SECRET-42&client_id=andon"

func postToken(ctx context.Context, t *testing.T, c *http.Client, u string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(tokenForm))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.Do(req)
}

func TestTokenLegIsOneOAuthTokenRowWithoutTheToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"access_token":"at-SECRET-43","token_type":"Bearer"}`))
	})
	c := b.client(t, b.config("", "127.0.0.1"))
	ctx := egress.WithTokenLeg(egress.WithRun(t.Context(), "run-leg"), egress.TokenLeg{Issuer: "http://127.0.0.1/issuer?x=1", GrantType: "refresh_token"})
	resp, err := postToken(ctx, t, c, srv.srv.URL+"/token")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	row := b.oneRow(t, "run-leg")
	if row.Action != audit.ActionOAuthToken || row.Reason != "refresh_token: ok" || row.Purpose != "test issuer http://127.0.0.1/issuer" {
		t.Fatalf("row = %+v", row.Entry)
	}
	for _, s := range []string{row.Purpose, row.Path, row.Reason, row.Host, b.logs.String()} {
		if strings.Contains(s, "SECRET") {
			t.Fatalf("a token reached the row or the log: %q", s)
		}
	}
}

func TestTokenLegCancelledInFlightSaysAbandoned(t *testing.T) {
	t.Parallel()
	b := setup(t)
	arrived := make(chan struct{})
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body) // so that the server notices the client go
		close(arrived)
		<-r.Context().Done()
	})
	c := b.client(t, b.config("", "127.0.0.1"))
	ctx, cancel := context.WithCancel(egress.WithTokenLeg(egress.WithRun(t.Context(), "run-cancel"), egress.TokenLeg{GrantType: "authorization_code"}))
	go func() { <-arrived; cancel() }()
	if _, err := postToken(ctx, t, c, srv.srv.URL+"/token"); err == nil {
		t.Fatal("the cancelled token request returned no error")
	}
	row := b.oneRow(t, "run-cancel")
	if row.Action != audit.ActionOAuthToken || row.Reason != "authorization_code: cancelled in flight, abandoned" {
		t.Fatalf("row = %+v", row.Entry)
	}
}

func TestTokenLegUnknownGrantIsALiteral(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.client(t, b.config("", "127.0.0.1"))
	ctx, cancel := context.WithCancel(egress.WithTokenLeg(egress.WithRun(t.Context(), "run-grant"), egress.TokenLeg{GrantType: "made up <script>"}))
	cancel()
	_, _ = postToken(ctx, t, c, "http://127.0.0.1:1/token")
	row := b.oneRow(t, "run-grant")
	if row.Reason != "other grant: cancelled before send" {
		t.Fatalf("row = %+v", row.Entry)
	}
}

func TestVetRefusesAPrivateAddressBeforeAnySecretIsRead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.setSecret(t, "m2m", "client:secret", "basic", "as.example.com")
	b.resolver.table = map[string][]netip.Addr{"as.example.com": addrs("10.0.0.7"), "ok.example.com": addrs("93.184.216.34")}
	tr, err := egress.NewTransport(t.Context(), b.config("m2m", "*"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	gets := b.backend.gets.Load()
	ctx := egress.WithRun(t.Context(), "run-vet")
	err = tr.Vet(ctx, &url.URL{Scheme: "https", Host: "as.example.com", Path: "/token"})
	if r, ok := refusal(err); !ok || r != egress.ReasonAddress {
		t.Fatalf("Vet(private) = %v, want ReasonAddress", err)
	}
	if r, ok := refusal(tr.Vet(ctx, &url.URL{Scheme: "http", Host: "ok.example.com", Path: "/token"})); !ok || r != egress.ReasonPlainHTTP {
		t.Fatalf("Vet(plain http) = %v, want ReasonPlainHTTP", r)
	}
	if err := tr.Vet(ctx, &url.URL{Scheme: "https", Host: "ok.example.com", Path: "/token"}); err != nil {
		t.Fatalf("Vet(public https) = %v", err)
	}
	if b.backend.gets.Load() != gets || b.secrets.applies.Load() != 0 {
		t.Fatal("Vet read a secret")
	}
	rows := b.rows(t, "run-vet")
	if len(rows) != 2 || rows[0].Method != "VET" || rows[0].Reason != string(egress.ReasonAddress) {
		t.Fatalf("rows = %+v", rows)
	}
}
