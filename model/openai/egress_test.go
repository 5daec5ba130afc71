package openai_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/egress"
	"github.com/andonhq/andon/model"
	"github.com/andonhq/andon/model/openai"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/vault"
)

// syncBuffer is a bytes.Buffer safe for concurrent writes, for slog.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// viaEgress is the model as andon runs it: its HTTP goes through an egress
// client that holds the API key (a vault secret, placement bearer, for
// 127.0.0.1) and audits every request.
type viaEgress struct {
	model *openai.Model
	log   *audit.Log
	logs  *syncBuffer
}

func newViaEgress(t *testing.T, baseURL string) *viaEgress {
	t.Helper()
	ctx := t.Context()
	st, err := sqlstore.Open(ctx, filepath.Join(t.TempDir(), "andon.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	key, err := vault.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	v := vault.New(st, key)
	auditKey, err := v.DeriveKey(ctx, "audit hmac v1")
	if err != nil {
		t.Fatal(err)
	}
	placement, err := vault.ParsePlacement("bearer")
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Set(ctx, "openai", []byte(distinctiveKey), placement, []string{"127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	e := &viaEgress{log: audit.New(st, auditKey), logs: &syncBuffer{}}
	tr, err := egress.NewTransport(ctx, &egress.Config{
		Purpose:      "model openai",
		Audit:        e.log,
		Credential:   "openai",
		Secrets:      v,
		AllowedHosts: []string{"127.0.0.1"}, // the fake server, on loopback
		Logger:       slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	e.model = newModel(t, openai.Config{BaseURL: baseURL, Model: "gpt-test", HTTPClient: hc})
	return e
}

// rows waits until the run has n audit rows (egress writes a row when the
// response body is closed, so maybe after Complete returned) and returns
// them.
func (e *viaEgress) rows(t *testing.T, runID string, n int) []audit.Row {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rows, err := e.log.List(context.Background(), audit.Query{RunID: runID})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) >= n || time.Now().After(deadline) {
			return rows
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// noKeyAnywhere fails if the key is in an audit row, a log line or err.
func (e *viaEgress) noKeyAnywhere(t *testing.T, errs ...error) {
	t.Helper()
	all, err := e.log.List(context.Background(), audit.Query{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range all {
		if strings.Contains(fmt.Sprintf("%+v", r.Entry), "DISTINCTIVE") {
			t.Errorf("the key is in an audit row: %+v", r.Entry)
		}
	}
	if strings.Contains(e.logs.String(), "DISTINCTIVE") {
		t.Errorf("the key is in the log:\n%s", e.logs)
	}
	for _, err := range errs {
		if err != nil && strings.Contains(fmt.Sprintf("%v %+v %#v", err, err, err), "DISTINCTIVE") {
			t.Errorf("the key is in an error: %v", err)
		}
	}
	if _, err := e.log.Verify(context.Background()); err != nil {
		t.Errorf("audit chain: %v", err)
	}
}

// Through egress, the key from the vault reaches the provider as a bearer
// token, the model never holds it, and the call leaves one audit row under
// its run.
func TestThroughEgress(t *testing.T) {
	t.Parallel()
	f := newFake(t, text("Hello from the provider."))
	e := newViaEgress(t, f.URL())
	ctx := egress.WithRun(t.Context(), "run_ok")
	resp, err := e.model.Complete(ctx, conversation())
	if err != nil || resp.Text != "Hello from the provider." {
		t.Fatalf("Complete = %+v, %v", resp, err)
	}
	if got := f.got()[0].Header.Get("Authorization"); got != "Bearer "+distinctiveKey {
		t.Errorf("the provider got Authorization %q, want the vault's key", got)
	}
	rows := e.rows(t, "run_ok", 1)
	if len(rows) != 1 || rows[0].Action != audit.ActionHTTPCall || !rows[0].OK || rows[0].Status != 200 ||
		rows[0].Purpose != "model openai" || rows[0].Method != "POST" || rows[0].Path != "/v1/chat/completions" {
		t.Errorf("audit rows = %+v, want one ok http_call POST /v1/chat/completions", rows)
	}
	e.noKeyAnywhere(t)
}

// A provider that refuses the key and echoes it back: the error says what
// happened and holds no key; the row is a failed http_call.
func TestThroughEgressRefused(t *testing.T) {
	t.Parallel()
	f := newFake(t, errorAnswer(401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided: AUTH."))
	e := newViaEgress(t, f.URL())
	_, err := e.model.Complete(egress.WithRun(t.Context(), "run_401"), conversation())
	var ae *openai.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 401 || !strings.Contains(err.Error(), "refused the credential") {
		t.Fatalf("err = %v, want a 401 *APIError", err)
	}
	rows := e.rows(t, "run_401", 1)
	if len(rows) != 1 || rows[0].Action != audit.ActionHTTPCall || rows[0].OK || rows[0].Status != 401 {
		t.Errorf("audit rows = %+v, want one failed http_call with status 401", rows)
	}
	e.noKeyAnywhere(t, err)
}

// A run cancelled while the provider thinks: the call returns at once with
// context.Canceled, and egress records http_call_cancelled (the key went
// out).
func TestThroughEgressCancelled(t *testing.T) {
	t.Parallel()
	f := newFake(t, nil) // never answers
	e := newViaEgress(t, f.URL())
	ctx, cancel := context.WithCancelCause(egress.WithRun(t.Context(), "run_cancel"))
	go func() {
		<-f.started
		cancel(errStop)
	}()
	done := make(chan error, 1)
	go func() {
		_, err := e.model.Complete(ctx, conversation())
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Complete did not return after its ctx was cancelled")
	}
	if !errors.Is(err, context.Canceled) || !errors.Is(err, errStop) {
		t.Errorf("err = %v, want context.Canceled and the cause", err)
	}
	rows := e.rows(t, "run_cancel", 1)
	if len(rows) != 1 || rows[0].Action != audit.ActionHTTPCallCancelled {
		t.Errorf("audit rows = %+v, want one http_call_cancelled", rows)
	}
	e.noKeyAnywhere(t, err)
}

// A run already cancelled sends nothing and reads no secret.
func TestThroughEgressCancelledBeforeSend(t *testing.T) {
	t.Parallel()
	f := newFake(t, text("never"))
	e := newViaEgress(t, f.URL())
	ctx, cancel := context.WithCancel(egress.WithRun(t.Context(), "run_early"))
	cancel()
	if _, err := e.model.Complete(ctx, &model.Request{Messages: []model.Message{{Role: model.RoleUser, Text: "hi"}}}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if n := len(f.got()); n != 0 {
		t.Errorf("%d requests reached the provider", n)
	}
}
