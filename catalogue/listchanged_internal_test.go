package catalogue

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// refreshFixture is a catalogue of one mcptest server whose first dial
// waits for release.
func refreshFixture(t *testing.T) (*Catalogue, *server, *mcptest.Server, chan struct{}, *atomic.Int32) {
	t.Helper()
	srv := mcptest.NewServer(nil)
	release := make(chan struct{})
	var dials atomic.Int32
	cat, err := New(&Config{Servers: []Server{{Name: "s", Command: []string{"mcptest"}}}}, &Options{
		Dial: func(ctx context.Context, _ Server) (mcp.Transport, error) {
			if dials.Add(1) == 1 {
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return srv.Transport(), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close(); srv.Close() })
	return cat, cat.servers[0], srv, release, &dials
}

// A change of the tools of a server in its back-off after a failed import
// starts nothing: the next listing after the back-off imports them.
func TestRefreshWaitsOutTheBackoff(t *testing.T) {
	_, s, _, release, dials := refreshFixture(t)
	close(release)
	s.mu.Lock()
	s.retryAt = time.Now().Add(time.Hour)
	s.mu.Unlock()
	s.refresh("list_changed")
	s.mu.Lock()
	refreshing := s.refreshing
	s.mu.Unlock()
	if refreshing || dials.Load() != 0 {
		t.Fatalf("a refresh in the back-off started (refreshing %v, %d dials)", refreshing, dials.Load())
	}
}

// Many changes while a re-import runs cost one more re-import, not one
// each.
func TestRefreshCoalesces(t *testing.T) {
	_, s, srv, release, _ := refreshFixture(t)
	for range 10 {
		s.refresh("list_changed")
	}
	close(release)
	deadline := time.Now().Add(30 * time.Second)
	for {
		s.mu.Lock()
		done := !s.refreshing && s.tools != nil
		s.mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the re-imports never ended")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := len(srv.ReceivedMessages("tools/list")); n != 2 {
		t.Fatalf("%d tools/list for 10 changes during one re-import, want 2 (that one, and one after it)", n)
	}
}
