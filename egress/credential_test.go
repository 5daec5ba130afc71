package egress_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/andonhq/andon/egress"
	"github.com/andonhq/andon/vault"
)

func TestTheCredentialGoesOnlyToItsOwnHosts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := newRecorder(t, nil)
	b.setSecret(t, "token", "own-hosts-secret", "bearer", "localhost")
	// 127.0.0.1 is allowed globally but is not one of the credential's hosts.
	c := b.client(t, b.config("token", "127.0.0.1"))
	resp, err := get(t.Context(), t, c, srv.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := srv.received(); len(got) != 1 || got[0].Authorization != "" {
		t.Fatalf("the server saw %+v; the credential is not for this host", got)
	}
	if b.secrets.applies.Load() != 0 {
		t.Fatal("the secret was read for a host it is not for")
	}
}

func TestQueryPlacementStaysOutOfTheAuditRow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := newRecorder(t, nil)
	b.setSecret(t, "token", "query-secret", "query:api_key", "127.0.0.1")
	c := b.client(t, b.config("token", "127.0.0.1"))
	resp, err := get(egress.WithRun(t.Context(), "run-1"), t, c, srv.srv.URL+"/v1/items?page=2")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	got := srv.received()
	if len(got) != 1 || !strings.Contains(got[0].RawQuery, "api_key=query-secret") || !strings.Contains(got[0].RawQuery, "page=2") {
		t.Fatalf("the server saw %+v", got)
	}
	if resp.Request.URL.RawQuery != "page=2" {
		t.Fatalf("resp.Request carries the credential: %q", resp.Request.URL.RawQuery)
	}
	row := b.oneRow(t, "run-1")
	if row.Path != "/v1/items" || strings.Contains(row.Host, "?") {
		t.Fatalf("row = %+v", row)
	}
}

func TestAMissingOrUnreadableCredentialIsRefusedWithItsOwnReason(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := newRecorder(t, nil)
	b.setSecret(t, "token", "gone-secret", "bearer", "127.0.0.1")
	c := b.client(t, b.config("token", "127.0.0.1"))
	if err := b.vault.Remove(t.Context(), "token"); err != nil {
		t.Fatal(err)
	}
	_, err := get(egress.WithRun(t.Context(), "missing"), t, c, srv.srv.URL)
	if reason, _ := refusal(err); reason != egress.ReasonNoCredential || !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("err = %v, want a missing-credential refusal", err)
	}
	if row := b.oneRow(t, "missing"); row.Reason != string(egress.ReasonNoCredential) || row.OK {
		t.Fatalf("row = %+v", row)
	}

	// The same secret, sealed under another master key.
	other, _ := vault.NewKey()
	p, _ := vault.ParsePlacement("bearer")
	if err := vault.New(b.backend, other).Set(t.Context(), "token", []byte("gone-secret"), p, []string{"127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	_, err = get(egress.WithRun(t.Context(), "wrong key"), t, c, srv.srv.URL)
	if reason, _ := refusal(err); reason != egress.ReasonBadCredential || !errors.Is(err, vault.ErrWrongKey) {
		t.Fatalf("err = %v, want an unreadable-credential refusal", err)
	}
	if row := b.oneRow(t, "wrong key"); row.Reason != string(egress.ReasonBadCredential) {
		t.Fatalf("row = %+v", row)
	}
	if got := srv.received(); len(got) != 0 {
		t.Fatalf("the server saw %+v", got)
	}
}

func TestNewTransportNeedsAnExistingCredential(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := egress.NewTransport(t.Context(), b.config("absent"))
	if !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("NewTransport with an unknown credential = %v, want ErrNotFound", err)
	}
	for name, cfg := range map[string]*egress.Config{
		"no purpose":   {Audit: b.log},
		"no audit":     {Purpose: "p"},
		"no secrets":   {Purpose: "p", Audit: b.log, Credential: "x"},
		"bad wildcard": {Purpose: "p", Audit: b.log, AllowedHosts: []string{"*.*.example.com"}},
		"bad CIDR":     {Purpose: "p", Audit: b.log, AllowedHosts: []string{"10.0.0.0/99"}},
	} {
		if _, err := egress.NewTransport(t.Context(), cfg); err == nil {
			t.Errorf("%s: NewTransport accepted it", name)
		}
	}
	if _, err := egress.NewTransport(t.Context(), nil); err == nil {
		t.Error("NewTransport(nil) succeeded")
	}
}

func TestTheRunAndPurposeReachTheRow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := newRecorder(t, nil)
	cfg := b.config("", "127.0.0.1")
	cfg.Purpose = "mcp weather"
	resp, err := get(egress.WithRun(context.WithoutCancel(t.Context()), "run-42"), t, b.client(t, cfg), srv.srv.URL+"/tools")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	row := b.oneRow(t, "run-42")
	if row.Purpose != "mcp weather" || row.RunID != "run-42" || row.Method != http.MethodGet || row.Path != "/tools" ||
		row.Host != strings.TrimPrefix(srv.srv.URL, "http://") {
		t.Fatalf("row = %+v", row)
	}
}
