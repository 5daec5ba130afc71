package mcp_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// cancelSents collects what OnCancelSent is told.
type cancelSents struct {
	mu   sync.Mutex
	got  []string // transports, in order
	durs []time.Duration
	sig  chan struct{}
}

func newCancelSents() *cancelSents { return &cancelSents{sig: make(chan struct{}, 16)} }

func (s *cancelSents) hook(transport string, d time.Duration) {
	s.mu.Lock()
	s.got = append(s.got, transport)
	s.durs = append(s.durs, d)
	s.mu.Unlock()
	s.sig <- struct{}{}
}

// wait waits for the nth observation; the deadline only keeps a broken
// test from hanging.
func (s *cancelSents) wait(t *testing.T, n int) ([]string, []time.Duration) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		s.mu.Lock()
		got, durs := slices.Clone(s.got), slices.Clone(s.durs)
		s.mu.Unlock()
		if len(got) >= n {
			return got, durs
		}
		select {
		case <-s.sig:
		case <-deadline:
			t.Fatalf("OnCancelSent was called %d times, want %d", len(got), n)
		}
	}
}

func (m mode) transportName() string {
	switch {
	case m.http == nil:
		return mcp.TransportStdio
	case slices.Contains(m.http.Generations, mcptest.LegacySSE):
		return mcp.TransportSSE
	default:
		return mcp.TransportHTTP
	}
}

// OnCancelSent is told once per interrupted call, with the transport, once
// the server has been told — a cancel and a timeout alike — and never for
// a call that completed or was cancelled before anything was sent.
func TestOnCancelSentReportsEachCancelOnTheWire(t *testing.T) {
	modes := []mode{inproc2026, stdio2025, http2026, http2026JSON, http2025, http2024}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			s := newCancelSents()
			b := setup(t, m, &setupOpts{client: mcp.ClientOptions{OnCancelSent: s.hook}})

			b.mustCall("echo", map[string]any{"text": "done"})
			pre, cancelPre := context.WithCancel(context.Background())
			cancelPre()
			if _, err := b.client.CallTool(pre, "echo", nil, nil); !errors.Is(err, mcp.ErrCancelled) {
				t.Fatalf("pre-cancelled CallTool = %v, want ErrCancelled", err)
			}

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			b.cancelWhenStarted("slow", 1, cancel)
			if _, err := b.client.CallTool(ctx, "slow", map[string]any{"ms": 30000}, nil); !errors.Is(err, mcp.ErrCancelled) {
				t.Fatalf("CallTool = %v, want ErrCancelled", err)
			}
			b.assertCancelledOnTheWire(b.toolCallIDs()[1])
			s.wait(t, 1)

			_, err := b.client.CallTool(context.Background(), "slow", map[string]any{"ms": 30000}, &mcp.CallOptions{Timeout: 50 * time.Millisecond})
			if !errors.Is(err, mcp.ErrTimeout) {
				t.Fatalf("CallTool = %v, want ErrTimeout", err)
			}
			s.wait(t, 2)
			b.mustCall("echo", map[string]any{"text": "after"})
			got, durs := s.wait(t, 2)

			want := []string{m.transportName(), m.transportName()}
			if !slices.Equal(got, want) {
				t.Errorf("OnCancelSent transports = %v, want %v (one per interrupted call, none for the completed or pre-cancelled ones)", got, want)
			}
			for _, d := range durs {
				if d < 0 {
					t.Errorf("OnCancelSent duration %v < 0", d)
				}
			}
		})
	}
}
