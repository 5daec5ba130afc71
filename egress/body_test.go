package egress_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/egress"
)

func TestResponseBodyIsCapped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(bytes.Repeat([]byte("x"), 2048))
	})
	cfg := b.config("", "127.0.0.1")
	cfg.MaxResponseBytes = 1024
	resp, err := get(egress.WithRun(t.Context(), "run-1"), t, b.client(t, cfg), srv.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	var tooLarge *egress.ResponseTooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Limit != 1024 || len(data) != 1024 {
		t.Fatalf("read %d bytes, err %v; want 1024 and a ResponseTooLargeError", len(data), err)
	}
	if _, err := resp.Body.Read(make([]byte, 1)); !errors.As(err, &tooLarge) {
		t.Fatalf("a read after the cap = %v, want the same error again", err)
	}
	row := b.oneRow(t, "run-1")
	if row.Action != audit.ActionHTTPCall || row.OK || row.Status != 200 || row.Reason != string(egress.ReasonTooLarge) {
		t.Fatalf("row = %+v", row)
	}
}

func TestTheRowIsWrittenWhenTheCallIsOver(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		status int
		finish func(t *testing.T, body io.ReadCloser)
		ok     bool
		reason egress.Reason
	}{
		{"read to the end", 200, func(t *testing.T, body io.ReadCloser) { _, _ = io.ReadAll(body) }, true, egress.ReasonCompleted},
		{"closed early", 200, func(t *testing.T, body io.ReadCloser) { _, _ = body.Read(make([]byte, 2)); body.Close() }, true, egress.ReasonClosedEarly},
		{"error status", 503, func(t *testing.T, body io.ReadCloser) { _, _ = io.ReadAll(body) }, false, egress.ReasonErrorStatus},
		{"error status closed early", 404, func(t *testing.T, body io.ReadCloser) { body.Close() }, false, egress.ReasonErrorStatus},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(c.status)
				_, _ = w.Write(bytes.Repeat([]byte("y"), 64))
			})
			resp, err := get(egress.WithRun(t.Context(), "run-1"), t, b.client(t, b.config("", "127.0.0.1")), srv.srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			if rows := b.rows(t, "run-1"); len(rows) != 0 {
				t.Fatalf("a row was written before the body was done: %+v", rows)
			}
			c.finish(t, resp.Body)
			resp.Body.Close()
			row := b.oneRow(t, "run-1")
			if row.Action != audit.ActionHTTPCall || row.Status != c.status || row.OK != c.ok || row.Reason != string(c.reason) {
				t.Fatalf("row = %+v, want status %d ok %v reason %q", row, c.status, c.ok, c.reason)
			}
		})
	}
}

func TestAHeadRequestEndsAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := newRecorder(t, nil)
	req, _ := http.NewRequestWithContext(egress.WithRun(t.Context(), "run-1"), http.MethodHead, srv.srv.URL, nil)
	resp, err := b.client(t, b.config("", "127.0.0.1")).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	row := b.oneRow(t, "run-1")
	resp.Body.Close()
	if row.Method != http.MethodHead || !row.OK || row.Reason != string(egress.ReasonCompleted) {
		t.Fatalf("row = %+v", row)
	}
	if rows := b.rows(t, "run-1"); len(rows) != 1 {
		t.Fatalf("closing the body wrote another row: %+v", rows)
	}
}

func TestATransportFailureIsAFailedCall(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := newRecorder(t, nil)
	url := srv.srv.URL
	srv.srv.Close() // nothing listens there now
	_, err := get(egress.WithRun(t.Context(), "run-1"), t, b.client(t, b.config("", "127.0.0.1")), url)
	if err == nil || errors.Is(err, egress.ErrRefused) {
		t.Fatalf("err = %v, want a transport error", err)
	}
	row := b.oneRow(t, "run-1")
	if row.Action != audit.ActionHTTPCall || row.OK || row.Reason != string(egress.ReasonTransport) {
		t.Fatalf("row = %+v", row)
	}
}
