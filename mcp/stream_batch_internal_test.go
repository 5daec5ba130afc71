package mcp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
)

// gatedWriter records each Write, and holds the first until released.
type gatedWriter struct {
	mu      sync.Mutex
	writes  [][]byte
	started chan struct{}
	release chan struct{}
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	first := len(w.writes) == 0
	w.writes = append(w.writes, bytes.Clone(p))
	w.mu.Unlock()
	if first {
		close(w.started)
		<-w.release
	}
	return len(p), nil
}

// Frames that queue while the pipe is busy go out together, in the order
// they were queued, each whole: a storm of cancellations costs the server
// a few reads, not one per call.
func TestQueuedFramesGoOutInOneWrite(t *testing.T) {
	w := &gatedWriter{started: make(chan struct{}), release: make(chan struct{})}
	pr, pw := io.Pipe()
	defer pw.Close()
	c := newStreamConn(pr, w, connConfig{})
	go c.writeLoop()
	defer close(c.quit)

	send := func(i int) error {
		return c.send(context.Background(), &jsonrpc.Message{Method: "notifications/cancelled", Params: []byte(fmt.Sprintf(`{"requestId":%d}`, i))})
	}
	errs := make(chan error, 10)
	go func() { errs <- send(0) }()
	<-w.started // the writer is busy with frame 0
	for i := 1; i < 10; i++ {
		go func() { errs <- send(i) }()
		for len(c.queue) < i { // queued, in this order
			runtime.Gosched()
		}
	}
	close(w.release)
	for range 10 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.writes) != 2 {
		t.Fatalf("%d writes for 10 frames of which 9 queued together; want 2", len(w.writes))
	}
	lines := bytes.SplitAfter(w.writes[1], []byte("\n"))
	if len(lines) != 10 || len(lines[9]) != 0 {
		t.Fatalf("the second write holds %q; want 9 whole frames", w.writes[1])
	}
	for i, line := range lines[:9] {
		if want := fmt.Sprintf(`"requestId":%d}`, i+1); !bytes.Contains(line, []byte(want)) {
			t.Errorf("frame %d of the batch = %s; want the frame queued %d", i, line, i+1)
		}
	}
}
