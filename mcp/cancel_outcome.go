package mcp

import (
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
)

// CancelOutcome is what became of a call after its cancel went out: most
// revisions let a server say nothing, so a client learns only what the
// server did anyway.
type CancelOutcome string

// The outcomes of a cancel ([CallOptions].OnCancelOutcome).
const (
	// CancelConfirmed: the work is known to have stopped: the stdio
	// server's process exited (or its stream ended) after the cancel.
	// (For a call that became a task, the task's own state after
	// tasks/cancel says so: see [Client.CancelTask].)
	CancelConfirmed CancelOutcome = "confirmed"
	// CancelCompletedAnyway: a result for the call arrived after the
	// cancel: the server did the work anyway.
	CancelCompletedAnyway CancelOutcome = "completed_anyway"
	// CancelUnconfirmed: nothing was heard of the call within the
	// client's CancelOutcomeWindow (or the client was closed first), as
	// the protocol allows.
	CancelUnconfirmed CancelOutcome = "unconfirmed"
)

// DefaultCancelOutcomeWindow is how long a client listens, after a
// cancel, for what became of the call.
const DefaultCancelOutcomeWindow = 5 * time.Second

// watchCancel starts watching for the outcome of call id, cancelled now,
// and returns the late-reply handler to register for it (which calls late
// too, if set). tell is told once: completed_anyway on a late result that
// is not a task's creation, confirmed when a stdio connection ends (the
// server exited), unconfirmed when the window passes or the client is
// closed by its owner.
func (c *Client) watchCancel(id int64, tell func(CancelOutcome), late func(json.RawMessage)) func(json.RawMessage) {
	var once sync.Once
	done := make(chan struct{})
	report := func(o CancelOutcome) {
		once.Do(func() {
			close(done)
			tell(o)
		})
	}
	go func() {
		t := time.NewTimer(c.opts.CancelOutcomeWindow)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			c.takeLate(jsonrpc.Int(id))
			report(CancelUnconfirmed)
		case <-c.closed:
			if _, stream := c.conn.(*streamConn); stream && !errors.Is(c.err(), errClientClosed) {
				report(CancelConfirmed) // the server's end of the stream is gone: its process exited
				return
			}
			report(CancelUnconfirmed)
		}
	}()
	return func(raw json.RawMessage) {
		if late != nil {
			late(raw)
		}
		if !createsTask(raw) {
			report(CancelCompletedAnyway)
		}
	}
}

// createsTask reports whether a tools/call result is a task's creation
// (CreateTaskResult), not the tool's result.
func createsTask(raw json.RawMessage) bool {
	var r struct {
		Task json.RawMessage `json:"task"`
	}
	return json.Unmarshal(raw, &r) == nil && len(r.Task) > 0
}
