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
// the server started it and when it saw it cancelled. The servers stamp
// their records with the wall clock, which the harness reads too.
type calls struct {
	mu    sync.Mutex
	byTag map[string]*call
	err   error // the first unreadable record
}

// call is what a server recorded of one tagged call.
type call struct {
	started, cancelled       chan struct{} // closed when recorded
	startedAt, cancelledAt   time.Time
	startedSet, cancelledSet bool
}

func newCalls() *calls { return &calls{byTag: map[string]*call{}} }

// get returns the call of tag, creating it; c.mu is held.
func (c *calls) getLocked(tag string) *call {
	cl := c.byTag[tag]
	if cl == nil {
		cl = &call{started: make(chan struct{}), cancelled: make(chan struct{})}
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

// waitCancelled waits until the server has seen the call of tag
// cancelled, and returns when.
func (c *calls) waitCancelled(ctx context.Context, tag string) (time.Time, error) {
	c.mu.Lock()
	cl := c.getLocked(tag)
	c.mu.Unlock()
	select {
	case <-cl.cancelled:
		c.mu.Lock()
		defer c.mu.Unlock()
		return cl.cancelledAt, nil
	case <-ctx.Done():
		return time.Time{}, fmt.Errorf("loadtest: waiting for the server to see call %s cancelled: %w", tag, context.Cause(ctx))
	}
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
	case r.Kind == mcptest.ToolStarted || r.Kind == mcptest.ToolCancelled:
		tag, ok := tags[r.ID]
		if !ok {
			return
		}
		c.mu.Lock()
		cl := c.getLocked(tag)
		if r.Kind == mcptest.ToolStarted && !cl.startedSet {
			cl.startedAt, cl.startedSet = r.At, true
			close(cl.started)
		}
		if r.Kind == mcptest.ToolCancelled && !cl.cancelledSet {
			cl.cancelledAt, cl.cancelledSet = r.At, true
			close(cl.cancelled)
		}
		c.mu.Unlock()
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
