package catalogue

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
)

// Each failure in a row doubles the back-off, from ImportBackoff up to
// MaxImportBackoff; a success starts over.
func TestImportBackoffDoubles(t *testing.T) {
	cat, err := New(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	s := testServer(t, cat, Server{Name: "s"})
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var got []time.Duration
	for range 6 {
		s.failed(nil, errors.New("down"), now)
		got = append(got, s.retryAt.Sub(s.failedAt))
	}
	want := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, time.Minute, time.Minute}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("back-offs = %v, want %v", got, want)
		}
	}
	s.finish(nil, []*Tool{}, nil, now)
	s.failed(nil, errors.New("down again"), now)
	if d := s.retryAt.Sub(s.failedAt); d != 5*time.Second || s.failures != 1 {
		t.Errorf("after a success, a failure backs off %v (failures %d), want 5s (1)", d, s.failures)
	}
}

// Once the back-off has passed, a listing tries the server again without
// waiting for it, and offers its tools from the listing after it imports.
func TestRetryAfterBackoffIsNotWaitedFor(t *testing.T) {
	var dials int
	down := true
	release := make(chan struct{})
	cat, err := New(&Config{Servers: []Server{{Name: "s", Command: []string{"x"}}}}, &Options{
		ImportBackoff: time.Nanosecond,
		Dial: func(ctx context.Context, _ Server) (mcp.Transport, error) {
			dials++
			if down {
				return nil, errors.New("down")
			}
			<-release // the retry is slow
			return nil, errors.New("still down")
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	if _, err := cat.List(context.Background()); err == nil {
		t.Fatal("List with the only server down is not an error")
	}
	down = false
	s := cat.servers[0]
	for !time.Now().After(s.retryAt) {
		time.Sleep(time.Millisecond)
	}
	// The retry blocks in its dial until released: this List must return
	// without it, with the error remembered.
	listed := make(chan error, 1)
	go func() {
		_, err := cat.List(context.Background())
		listed <- err
	}()
	select {
	case err := <-listed:
		if err == nil {
			t.Error("List during a retry of the only server is not an error")
		}
	case <-time.After(30 * time.Second):
		t.Error("List waited for the retry of a server that failed before")
		defer func() { <-listed }()
	}
	// Read the flight while its dial is still held: once released, the
	// retry fails and clears it.
	s.mu.Lock()
	f := s.flight
	s.mu.Unlock()
	close(release)
	if f == nil {
		t.Fatal("no retry was started once the back-off had passed")
	}
	<-f.done
	if dials != 2 || s.failures != 2 {
		t.Errorf("dials %d, failures %d; want 2 and 2", dials, s.failures)
	}
}
