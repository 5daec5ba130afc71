package catalogue_test

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp"
)

// A call's budget covers the reconnection it needs: a server that comes
// back and never answers the handshake costs the call its connect_timeout
// (or its timeout), and the call fails naming the leg and the bound.
func TestBudgetCoversReconnect(t *testing.T) {
	for _, c := range []struct {
		name   string
		budget catalogue.Budget
		want   string
	}{
		{"connect_timeout", catalogue.Budget{Timeout: time.Minute, ConnectTimeout: 200 * time.Millisecond},
			`The call to tool "echo" on server "s" timed out during initialize: its connect_timeout of 200ms passed.`},
		{"timeout", catalogue.Budget{Timeout: 300 * time.Millisecond},
			`The call to tool "echo" on server "s" timed out during initialize: its timeout of 300ms passed.`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, []catalogue.Server{{Name: "s", Command: stdio, Protocol: mcp.Version20251125,
				Tools: map[string]catalogue.ToolConfig{"echo": {Budget: c.budget}}}}, nil, nil)
			tool := f.tool("mcp_s_echo")
			f.cut()
			f.logs.waitFor(t, "mcp: connection lost", 1)
			// The server comes back deaf: it reads and never answers.
			f.intercept(func(context.Context, catalogue.Server, func() (mcp.Transport, error)) (mcp.Transport, error) {
				client, server := net.Pipe()
				f.wg.Go(func() {
					io.Copy(io.Discard, server)
					server.Close()
				})
				return mcp.Stream(client), nil
			})
			res, err := tool.Call(context.Background(), []byte(`{"text":"x"}`))
			wantResult(t, res, err, agent.OutcomeFailed, c.want)
		})
	}
}

// progress_resets_timeout: progress keeps a call alive past its timeout,
// and max_timeout bounds it still.
func TestProgressResetsTimeout(t *testing.T) {
	// 12 steps 200 ms apart: 2.4 s in all, each step well within 1.5 s.
	const args = `{"count":12,"interval_ms":200}`
	yes := true
	f := newFixture(t, []catalogue.Server{{Name: "s", Command: stdio, Tools: map[string]catalogue.ToolConfig{
		"progress": {Budget: catalogue.Budget{Timeout: 1500 * time.Millisecond, ProgressResetsTimeout: &yes}},
	}}, {Name: "capped", Command: stdio, Budget: catalogue.Budget{
		Timeout: 1500 * time.Millisecond, ProgressResetsTimeout: &yes, MaxTimeout: 1600 * time.Millisecond,
	}}, {Name: "plain", Command: stdio, Budget: catalogue.Budget{Timeout: 1500 * time.Millisecond}}}, nil, nil)

	res, err := f.call(context.Background(), "mcp_s_progress", args)
	wantResult(t, res, err, agent.OutcomeOK, "")
	res, err = f.call(context.Background(), "mcp_capped_progress", args)
	wantResult(t, res, err, agent.OutcomeFailed, `timed out during tools/call: its max_timeout of 1.6s passed.`)
	res, err = f.call(context.Background(), "mcp_plain_progress", args)
	wantResult(t, res, err, agent.OutcomeFailed, `timed out during tools/call: its timeout of 1.5s passed.`)
}

// The reconnection and the call spend one budget: a call that would fit in
// its timeout on its own times out when the reconnection before it took
// most of the timeout. (Delays only make it time out the more surely.)
func TestBudgetSharedByReconnectAndCall(t *testing.T) {
	f := newFixture(t, []catalogue.Server{{Name: "s", Command: stdio,
		Tools: map[string]catalogue.ToolConfig{"slow": {Budget: catalogue.Budget{Timeout: time.Second}}}}}, nil, nil)
	tool := f.tool("mcp_s_slow")
	res, err := tool.Call(context.Background(), []byte(`{"ms":600}`))
	wantResult(t, res, err, agent.OutcomeOK, "") // 600 ms fit in the budget
	f.cut()
	f.logs.waitFor(t, "mcp: connection lost", 1)
	// The server takes 700 ms to come back.
	f.intercept(func(ctx context.Context, _ catalogue.Server, next func() (mcp.Transport, error)) (mcp.Transport, error) {
		select {
		case <-time.After(700 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return next()
	})
	res, err = tool.Call(context.Background(), []byte(`{"ms":600}`))
	wantResult(t, res, err, agent.OutcomeFailed, `timed out during tools/call: its timeout of 1s passed.`)
}

// Close ends an import under way, however long its budget: the listing
// waiting for it returns ErrClosed, and the connection attempt is closed.
func TestCloseEndsAStalledImport(t *testing.T) {
	f := newFixture(t, []catalogue.Server{{Name: "stuck", Command: stdio, Protocol: mcp.Version20251125,
		Budget: catalogue.Budget{Timeout: time.Hour}}}, nil, nil)
	dialled := make(chan struct{})
	peerClosed := make(chan struct{})
	f.intercept(func(context.Context, catalogue.Server, func() (mcp.Transport, error)) (mcp.Transport, error) {
		client, server := net.Pipe()
		f.wg.Go(func() {
			defer close(peerClosed)
			io.Copy(io.Discard, server)
		})
		close(dialled)
		return mcp.Stream(client), nil
	})
	listed := make(chan error, 1)
	go func() {
		_, err := f.cat.List(context.Background())
		listed <- err
	}()
	<-dialled
	closed := make(chan error, 1)
	go func() { closed <- f.cat.Close() }()
	select {
	case <-peerClosed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close during an import never closed its connection attempt")
	}
	select {
	case err := <-listed:
		if !errors.Is(err, catalogue.ErrClosed) {
			t.Errorf("the waiting List = %v, want ErrClosed", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting List never returned")
	}
	if err := <-closed; err != nil {
		t.Errorf("Close = %v", err)
	}
}
