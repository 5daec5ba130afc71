package egress_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/egress"
)

var errRunCancelled = errors.New("run cancelled by operator")

// stallServer records each request, says it arrived, optionally writes and
// flushes a first chunk, then holds the request until the client goes away,
// and says so.
type stallServer struct {
	*recorder
	arrived chan struct{}
	gone    chan struct{}
}

func newStallServer(t *testing.T, firstChunk string) *stallServer {
	t.Helper()
	s := &stallServer{arrived: make(chan struct{}, 1), gone: make(chan struct{}, 1)}
	s.recorder = newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if firstChunk != "" {
			_, _ = io.WriteString(w, firstChunk)
			w.(http.Flusher).Flush()
		}
		s.arrived <- struct{}{}
		<-r.Context().Done()
		s.gone <- struct{}{}
	})
	return s
}

type result struct {
	resp *http.Response
	err  error
}

func (b *testBundle) stallClient(t *testing.T) *http.Client {
	t.Helper()
	b.setSecret(t, "token", "cancel-secret", "bearer", "127.0.0.1")
	return b.client(t, b.config("token", "127.0.0.1"))
}

func TestCancelBeforeSend(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := newStallServer(t, "")
	c := b.stallClient(t)
	getsBefore := b.backend.gets.Load()

	ctx, cancel := context.WithCancelCause(egress.WithRun(t.Context(), "run-1"))
	cancel(errRunCancelled)
	_, err := get(ctx, t, c, srv.srv.URL+"/call")

	var ce *egress.CancelledError
	if !errors.As(err, &ce) || !ce.BeforeSend || !errors.Is(err, context.Canceled) || !errors.Is(err, errRunCancelled) {
		t.Fatalf("err = %v, want a before-send CancelledError matching context.Canceled and the cause", err)
	}
	row := b.oneRow(t, "run-1")
	if row.Action != audit.ActionHTTPCallCancelledBeforeSend || row.OK || row.Reason != string(egress.ReasonCancelledBeforeSend) {
		t.Fatalf("row = %+v", row)
	}
	if got := srv.received(); len(got) != 0 {
		t.Fatalf("the server received %+v", got)
	}
	if b.backend.gets.Load() != getsBefore || b.secrets.applies.Load() != 0 {
		t.Fatal("the secret was read for a call cancelled before send")
	}
	if len(b.dialer.addresses()) != 0 {
		t.Fatal("a call cancelled before send dialled")
	}
}

func TestDeadlineBeforeSendIsAFailure(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := newStallServer(t, "")
	c := b.stallClient(t)
	ctx, cancel := context.WithDeadline(egress.WithRun(t.Context(), "run-1"), time.Unix(0, 0))
	defer cancel()
	_, err := get(ctx, t, c, srv.srv.URL+"/call")
	var ce *egress.CancelledError
	if !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ce) {
		t.Fatalf("err = %v, want DeadlineExceeded and no CancelledError", err)
	}
	row := b.oneRow(t, "run-1")
	if row.Action != audit.ActionHTTPCall || row.OK || row.Reason != string(egress.ReasonDeadlineBeforeSend) {
		t.Fatalf("row = %+v", row)
	}
	if len(srv.received()) != 0 || b.secrets.applies.Load() != 0 {
		t.Fatal("a call past its deadline went out")
	}
}

func TestCancelInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := newStallServer(t, "")
	c := b.stallClient(t)

	ctx, cancel := context.WithCancelCause(egress.WithRun(t.Context(), "run-1"))
	done := make(chan result, 1)
	go func() {
		resp, err := get(ctx, t, c, srv.srv.URL+"/call")
		done <- result{resp, err}
	}()
	<-srv.arrived
	cancel(errRunCancelled)
	res := <-done
	<-srv.gone // the server saw the connection go

	var ce *egress.CancelledError
	if !errors.As(res.err, &ce) || ce.BeforeSend || !errors.Is(res.err, context.Canceled) || !errors.Is(res.err, errRunCancelled) {
		t.Fatalf("err = %v, want an in-flight CancelledError matching context.Canceled and the cause", res.err)
	}
	row := b.oneRow(t, "run-1")
	if row.Action != audit.ActionHTTPCallCancelled || row.OK || row.Reason != string(egress.ReasonCancelledInFlight) {
		t.Fatalf("row = %+v", row)
	}
	if got := srv.received(); len(got) != 1 || got[0].Authorization != "Bearer cancel-secret" {
		t.Fatalf("the server saw %+v; the credential went out and the row must say so", got)
	}
}

func TestCancelWhileStreamingTheBody(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := newStallServer(t, "first chunk")
	c := b.stallClient(t)

	ctx, cancel := context.WithCancelCause(egress.WithRun(t.Context(), "run-1"))
	resp, err := get(ctx, t, c, srv.srv.URL+"/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-srv.arrived
	buf := make([]byte, len("first chunk"))
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "first chunk" {
		t.Fatalf("first chunk: %q, %v", buf, err)
	}
	if rows := b.rows(t, "run-1"); len(rows) != 0 {
		t.Fatalf("a row was written while the response was still streaming: %+v", rows)
	}
	cancel(errRunCancelled)
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, context.Canceled) {
		t.Fatalf("reading after cancel: %v, want context.Canceled", err)
	}
	<-srv.gone
	row := b.oneRow(t, "run-1")
	if row.Action != audit.ActionHTTPCallCancelled || row.Status != http.StatusOK || row.OK {
		t.Fatalf("row = %+v, want http_call_cancelled with status 200", row)
	}
}

func TestDeadlineInFlightIsAFailureNotACancellation(t *testing.T) {
	t.Parallel()
	cases := map[string]func(context.Context) (context.Context, context.CancelFunc){
		"WithTimeout": func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 100*time.Millisecond)
		},
		"WithTimeoutCause": func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeoutCause(ctx, 100*time.Millisecond, errors.New("step budget spent"))
		},
		// A caller that implements its own timeout by cancelling with
		// DeadlineExceeded as the cause (as a per-call Timeout may).
		"CancelCauseDeadline": func(ctx context.Context) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancelCause(ctx)
			timer := time.AfterFunc(100*time.Millisecond, func() { cancel(context.DeadlineExceeded) })
			return ctx, func() { timer.Stop(); cancel(nil) }
		},
	}
	for name, withDeadline := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			srv := newStallServer(t, "")
			c := b.stallClient(t)
			ctx, cancel := withDeadline(egress.WithRun(t.Context(), "run-1"))
			defer cancel()
			_, err := get(ctx, t, c, srv.srv.URL+"/call")
			<-srv.gone
			var ce *egress.CancelledError
			if errors.As(err, &ce) {
				t.Fatalf("err = %v: a deadline reported as a cancellation", err)
			}
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want the context's error", err)
			}
			row := b.oneRow(t, "run-1")
			if row.Action != audit.ActionHTTPCall || row.OK || row.Reason != string(egress.ReasonDeadline) {
				t.Fatalf("row = %+v, want a failed http_call with reason %q", row, egress.ReasonDeadline)
			}
			if got := srv.received(); len(got) != 1 || got[0].Authorization != "Bearer cancel-secret" {
				t.Fatalf("the server saw %+v", got)
			}
		})
	}
}
