package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
)

// scriptedConn is a conn whose sends are decided by the test, for the races
// that cannot be forced through a real server: a reply that is already in
// hand when the interruption is seen, a notification that fails.
type scriptedConn struct {
	recv   receiver
	mu     sync.Mutex
	sent   []*jsonrpc.Message
	onSend func(ctx context.Context, m *jsonrpc.Message) error
}

func (s *scriptedConn) start()                               {}
func (s *scriptedConn) abandon(jsonrpc.ID, error)            {}
func (s *scriptedConn) abandonUnsent(jsonrpc.ID, error) bool { return false }
func (s *scriptedConn) notifiesCancel(revision) bool         { return true }
func (s *scriptedConn) close(context.Context) error          { return nil }
func (s *scriptedConn) negotiated(revision)                  {}

func (s *scriptedConn) send(ctx context.Context, m *jsonrpc.Message) error {
	s.mu.Lock()
	s.sent = append(s.sent, m)
	s.mu.Unlock()
	if s.onSend != nil {
		return s.onSend(ctx, m)
	}
	return nil
}

func (s *scriptedConn) messages(method string) []*jsonrpc.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*jsonrpc.Message
	for _, m := range s.sent {
		if m.Method == method {
			out = append(out, m)
		}
	}
	return out
}

// newScripted returns a client on a scripted conn, as if connected at
// version, logging to the returned buffer.
func newScripted(t *testing.T, version string) (*Client, *scriptedConn, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	c := newClient(&ClientOptions{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	sc := &scriptedConn{recv: c}
	c.conn = sc
	c.info.ProtocolVersion = version
	c.rev, _ = lookupRevision(version)
	t.Cleanup(func() { c.Close() })
	return c, sc, logs
}

func answer(recv receiver, id jsonrpc.ID, text string) {
	res, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": text}}})
	recv.receive(&jsonrpc.Message{ID: id, Result: res})
}

// Cases 12, 18 and 21: the reply is complete and in hand, but the call was
// interrupted while it was being sent: the reply is dropped, never
// returned, and the server is still told.
func TestCase21_ReplyInHandWhenInterruptedIsDropped(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts *CallOptions
		stop func(cancel context.CancelFunc)
		want error
	}{
		{"cancelled", nil, func(cancel context.CancelFunc) { cancel() }, ErrCancelled},
		{"deadline", &CallOptions{Timeout: time.Millisecond}, func(context.CancelFunc) { time.Sleep(20 * time.Millisecond) }, ErrTimeout},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, sc, _ := newScripted(t, Version20260728)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sc.onSend = func(_ context.Context, m *jsonrpc.Message) error {
				if m.Method == "tools/call" {
					answer(sc.recv, m.ID, "too late")
					tt.stop(cancel)
				}
				return nil
			}
			res, err := c.CallTool(ctx, "slow", nil, tt.opts)
			if !errors.Is(err, tt.want) || res != nil {
				t.Fatalf("CallTool = %v, %v; want no result and %v", res, err, tt.want)
			}
			c.bg.Wait()
			notes := sc.messages("notifications/cancelled")
			if len(notes) != 1 || !bytes.Contains(notes[0].Params, []byte(`"requestId":1`)) {
				t.Fatalf("notifications = %v, want one naming request 1", notes)
			}
			if len(c.calls) != 0 {
				t.Errorf("%d calls left pending", len(c.calls))
			}
		})
	}
}

// Case 15: a cancellation notification that cannot be sent is logged once at
// warn; the caller still gets its own error; the connection stays usable.
func TestCase15_FailedNotificationKeepsTheInterruption(t *testing.T) {
	c, sc, logs := newScripted(t, Version20251125)
	ctx, cancel := context.WithCancel(context.Background())
	sc.onSend = func(_ context.Context, m *jsonrpc.Message) error {
		switch m.Method {
		case "tools/call":
			if len(sc.messages("tools/call")) == 1 {
				cancel()
			} else {
				go answer(sc.recv, m.ID, "next")
			}
		case "notifications/cancelled":
			return errors.New("pipe broke")
		}
		return nil
	}
	_, err := c.CallTool(ctx, "slow", nil, nil)
	if !errors.Is(err, ErrCancelled) || strings.Contains(err.Error(), "pipe broke") {
		t.Fatalf("CallTool = %v, want the original ErrCancelled", err)
	}
	c.bg.Wait()
	if warns := strings.Count(logs.String(), "level=WARN"); warns != 1 || !strings.Contains(logs.String(), "request_id=1") {
		t.Errorf("want exactly one warning naming request 1, log:\n%s", logs)
	}
	res, err := c.CallTool(context.Background(), "echo", nil, nil)
	if err != nil || res.Text() != "next" {
		t.Fatalf("next call = %v, %v", res, err)
	}
}

// Case 25: an error reply for an abandoned call is dropped like a result.
func TestCase25_LateErrorReplyIsDropped(t *testing.T) {
	c, sc, _ := newScripted(t, Version20260728)
	ctx, cancel := context.WithCancel(context.Background())
	var first jsonrpc.ID
	sc.onSend = func(_ context.Context, m *jsonrpc.Message) error {
		if m.Method != "tools/call" {
			return nil
		}
		if !first.IsValid() {
			first = m.ID
			cancel()
			return nil
		}
		go func() {
			sc.recv.receive(&jsonrpc.Message{ID: first, Error: &jsonrpc.Error{Code: -32603, Message: "late failure"}})
			answer(sc.recv, m.ID, "own")
		}()
		return nil
	}
	if _, err := c.CallTool(ctx, "slow", nil, nil); !errors.Is(err, ErrCancelled) {
		t.Fatalf("CallTool = %v", err)
	}
	res, err := c.CallTool(context.Background(), "echo", nil, nil)
	if err != nil || res.Text() != "own" {
		t.Fatalf("next call = %v, %v; want its own result", res, err)
	}
}

// A request cancelled while still queued behind a blocked write never
// reaches the wire, so no notification names it.
func TestCancelledWhileQueuedSendsNoNotification(t *testing.T) {
	c, sc, _ := newScripted(t, Version20251125)
	ctx, cancel := context.WithCancel(context.Background())
	sc.onSend = func(ctx context.Context, m *jsonrpc.Message) error {
		if m.Method == "tools/call" {
			cancel()
			<-ctx.Done()
			return errNotSent
		}
		return nil
	}
	if _, err := c.CallTool(ctx, "slow", nil, nil); !errors.Is(err, ErrCancelled) {
		t.Fatalf("CallTool = %v", err)
	}
	c.bg.Wait()
	if n := len(sc.messages("notifications/cancelled")); n != 0 {
		t.Errorf("%d notifications for a request that never left", n)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
