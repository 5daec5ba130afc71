package node_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/andonhq/andon/node"
	"github.com/andonhq/andon/token"
)

// The API's event streams end when the node stops, so that an
// http.Server's Shutdown, which waits for every request, is not kept
// waiting by a console left open.
func TestHandlerStreamsEndWhenTheNodeStops(t *testing.T) {
	ctx := context.Background()
	n, err := node.New(ctx, &node.Config{DB: filepath.Join(t.TempDir(), "andon.db"), Key: newKey(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	secret, _, err := token.Create(ctx, n.Store(), "viewer", token.RoleViewer)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(n.Handler())
	defer hs.Close()
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- n.Run(runCtx) }()

	req, _ := http.NewRequestWithContext(ctx, "GET", hs.URL+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET /v1/events: %s, %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	ended := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, resp.Body); ended <- err }()
	stop()
	<-stopped
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("the stream ended with %v, want its end", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the event stream outlived the node's Run")
	}
}
