package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/andonhq/andon/mcp/mcptest"
)

// calls follows the record files of the MCP servers and tells, for each
// tagged call (the harness puts a tag in the slow tool's arguments), when
// the server started it, when the cancel reached the server and when the
// handler stopped. The servers stamp their records with the wall clock,
// which the harness reads too.
//
// The cancel reached the server ("wire") at the record of its signal: on
// stdio (and any transport with notifications) the Received record of the
// notifications/cancelled whose requestId is the call's; on 2026-07-28
// HTTP, where a cancel is the client closing the call's response stream,
// the StreamClosed record of the call. The handler stopped ("stopped") at
// its ToolCancelled record, which comes after the server has read and
// recorded every message before the cancel, and seen the handler's
// context end.
type calls struct {
	mu    sync.Mutex
	byTag map[string]*call
	err   error // the first unreadable record
}

// call is what a server recorded of one tagged call.
type call struct {
	started, wire, stopped    chan struct{} // closed when recorded
	startedAt, wireAt, stopAt time.Time
}

// mark sets *at and closes ch, the first time only; c.mu is held.
func mark(ch chan struct{}, at *time.Time, when time.Time) {
	select {
	case <-ch:
	default:
		*at = when
		close(ch)
	}
}

func newCalls() *calls { return &calls{byTag: map[string]*call{}} }

// get returns the call of tag, creating it; c.mu is held.
func (c *calls) getLocked(tag string) *call {
	cl := c.byTag[tag]
	if cl == nil {
		cl = &call{started: make(chan struct{}), wire: make(chan struct{}), stopped: make(chan struct{})}
		c.byTag[tag] = cl
	}
	return cl
}

// waitStarted waits until the server has started the call of tag.
func (c *calls) waitStarted(ctx context.Context, tag string) error {
	c.mu.Lock()
	cl := c.getLocked(tag)
	c.mu.Unlock()
	select {
	case <-cl.started:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("loadtest: waiting for the server to start call %s: %w", tag, context.Cause(ctx))
	}
}

// waitCancelled waits until the cancel of the call of tag has reached
// the server and its handler has stopped, and returns when each happened.
func (c *calls) waitCancelled(ctx context.Context, tag string) (wire, stopped time.Time, err error) {
	c.mu.Lock()
	cl := c.getLocked(tag)
	c.mu.Unlock()
	for _, w := range []struct {
		ch   chan struct{}
		what string
	}{{cl.wire, "receive the cancel of"}, {cl.stopped, "stop"}} {
		select {
		case <-w.ch:
		case <-ctx.Done():
			return time.Time{}, time.Time{}, fmt.Errorf("loadtest: waiting for the server to %s call %s: %w", w.what, tag, context.Cause(ctx))
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return cl.wireAt, cl.stopAt, nil
}

// follow reads the record file at path as the server appends to it, until
// ctx ends. Request ids are unique within one file (one client per
// server), so a record of a started or cancelled tool finds its tag
// through the tools/call request with that id.
func (c *calls) follow(ctx context.Context, path string) {
	f, err := os.Open(path)
	if err != nil {
		c.fail(err)
		return
	}
	defer f.Close()
	tags := map[string]string{} // request id → tag
	var part []byte
	buf := make([]byte, 256<<10)
	idle := time.NewTicker(time.Millisecond)
	defer idle.Stop()
	for {
		n, err := f.Read(buf)
		if err != nil && err != io.EOF {
			c.fail(err)
			return
		}
		part = append(part, buf[:n]...)
		for {
			i := bytes.IndexByte(part, '\n')
			if i < 0 {
				break
			}
			c.record(part[:i], tags)
			part = part[i+1:]
		}
		if n > 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-idle.C:
		}
	}
}

// record takes in one line of a record file.
func (c *calls) record(line []byte, tags map[string]string) {
	var r mcptest.Record
	if err := json.Unmarshal(line, &r); err != nil {
		c.fail(fmt.Errorf("record %.80q: %w", line, err))
		return
	}
	switch {
	case r.Kind == mcptest.Received && r.Method == "tools/call":
		var p struct {
			Arguments struct {
				Tag string `json:"tag"`
			} `json:"arguments"`
		}
		if json.Unmarshal(r.Params, &p) == nil && p.Arguments.Tag != "" {
			tags[r.ID] = p.Arguments.Tag
		}
	case r.Kind == mcptest.Received && r.Method == "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(r.Params, &p) == nil {
			c.saw(tags, string(p.RequestID), r)
		}
	case r.Kind == mcptest.ToolStarted || r.Kind == mcptest.ToolCancelled || r.Kind == mcptest.StreamClosed && r.ID != "":
		c.saw(tags, r.ID, r)
	}
}

// saw takes in r, a record about the call whose request id is id.
func (c *calls) saw(tags map[string]string, id string, r mcptest.Record) {
	tag, ok := tags[id]
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.getLocked(tag)
	switch r.Kind {
	case mcptest.ToolStarted:
		mark(cl.started, &cl.startedAt, r.At)
	case mcptest.ToolCancelled:
		mark(cl.stopped, &cl.stopAt, r.At)
	default: // the cancel's signal
		mark(cl.wire, &cl.wireAt, r.At)
	}
}

func (c *calls) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = fmt.Errorf("loadtest: reading the server's records: %w", err)
	}
}

// forget drops what is known of tag's call, once measured.
func (c *calls) forget(tag string) {
	c.mu.Lock()
	delete(c.byTag, tag)
	c.mu.Unlock()
}
