package mcptest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"
)

// What a [Record] is about.
const (
	// Received: the server read this message (Method, ID, Params, Raw).
	Received = "received"
	// ToolStarted: a tool handler began (Tool, ID).
	ToolStarted = "tool_started"
	// ToolCancelled: a tool handler saw its request cancelled and stopped
	// (Tool, ID); Reason is the cancellation's reason.
	ToolCancelled = "tool_cancelled"
	// ToolFinished: a tool handler completed and its response was written.
	ToolFinished = "tool_finished"
	// LateReply: the late tool (Tool) or the mcptest://late resource (URI)
	// answered a request after it was cancelled.
	LateReply = "late_reply"
	// ReadStarted, ReadCancelled, ReadFinished: a slow resources/read (URI,
	// ID) began, saw its request cancelled and stopped (Reason is the
	// cancellation's reason), or answered.
	ReadStarted   = "read_started"
	ReadCancelled = "read_cancelled"
	ReadFinished  = "read_finished"
)

// Record is one entry of a server's log: a message it received, or a thing
// a tool did. Records are kept in the order they happened.
type Record struct {
	At     time.Time `json:"at"`
	Kind   string    `json:"kind"`
	Method string    `json:"method,omitempty"`
	ID     string    `json:"id,omitempty"` // the request id as JSON, e.g. 3 or "a"
	// Session is the HTTP session the message came in (Mcp-Session-Id, or
	// the sessionId of an HTTP+SSE endpoint).
	Session string          `json:"session,omitempty"`
	Tool    string          `json:"tool,omitempty"`
	URI     string          `json:"uri,omitempty"`  // the resource of a Read* record
	Task    string          `json:"task,omitempty"` // the task id of a Task* record
	Reason  string          `json:"reason,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Raw     json.RawMessage `json:"raw,omitempty"`
	// Header holds the HTTP request's headers, for a message that came
	// over HTTP.
	Header http.Header `json:"header,omitempty"`
}

// recorder is an append-only, waitable log of records, optionally mirrored
// to a file as JSON lines (so a test can read what a subprocess saw).
//
// Recording is on the server's read path — every message read is recorded
// before it is acted on — so add does only what ordering needs: it stamps
// the time, appends under the lock and wakes waiters. Encoding and writing
// the file's lines is a writer goroutine's work, which takes whatever has
// queued, writes it in order and flushes when the queue is empty (or
// someone waits in sync: a steady stream of records does not hold a
// response back until it pauses). Before the server sends anything (a
// response, an HTTP status), [recorder.sync] waits until every record so
// far is in the file, so a client that saw an answer finds in the file
// everything the server recorded before it, as when every record was
// written at once; [recorder.closeFile] writes the rest.
type recorder struct {
	mu      sync.Mutex
	records []Record
	changed chan struct{} // closed and replaced on every append
	file    *mirror       // nil: no file
}

// mirror is the file side of a recorder: its queue and writer goroutine.
// Its fields are guarded by the recorder's mu, except w (the writer's).
type mirror struct {
	w       *bufio.Writer
	pending []Record      // recorded, not yet taken by the writer
	queued  int           // records ever queued
	written int           // records ever written and flushed
	work    sync.Cond     // signalled when pending grows or closing is set
	flushed sync.Cond     // broadcast when written grows or the writer ends
	waiting int           // goroutines in sync: flush without waiting for the queue to run dry
	closing bool          // closeFile was called: write the rest and end
	ended   bool          // the writer returned
	done    chan struct{} // closed when the writer returned
}

// setFile mirrors every record from now on to f, and starts the writer.
func (r *recorder) setFile(f *os.File) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := &mirror{w: bufio.NewWriterSize(f, 64<<10), done: make(chan struct{})}
	m.work.L, m.flushed.L = &r.mu, &r.mu
	r.file = m
	go r.write(m)
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) add(rec Record) {
	rec.At = time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec)
	close(r.changed)
	r.changed = make(chan struct{})
	if m := r.file; m != nil && !m.closing {
		m.pending = append(m.pending, rec)
		m.queued++
		m.work.Signal()
	}
}

// write is m's writer: it writes the queued records in order, flushing
// whenever the queue runs dry or sync waits, until closeFile asks it to
// end and nothing is left.
func (r *recorder) write(m *mirror) {
	defer close(m.done)
	var batch []Record
	unflushed := 0
	r.mu.Lock()
	for {
		for len(m.pending) == 0 && !m.closing {
			m.work.Wait()
		}
		batch, m.pending = m.pending, batch[:0]
		r.mu.Unlock()
		for i := range batch {
			line, _ := json.Marshal(batch[i])
			m.w.Write(line)
			m.w.WriteByte('\n')
			batch[i] = Record{}
		}
		unflushed += len(batch)
		r.mu.Lock()
		if len(m.pending) > 0 && m.waiting == 0 {
			continue // flushed when the queue runs dry, or someone waits
		}
		r.mu.Unlock()
		m.w.Flush()
		r.mu.Lock()
		m.written += unflushed
		unflushed = 0
		m.flushed.Broadcast()
		if m.closing && len(m.pending) == 0 {
			m.ended = true
			r.mu.Unlock()
			return
		}
	}
}

// sync waits until every record added so far is in the file (if there is
// one): the server calls it before it lets anything out.
func (r *recorder) sync() {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.file
	if m == nil {
		return
	}
	m.waiting++
	defer func() { m.waiting-- }()
	for target := m.queued; m.written < target && !m.ended; {
		m.flushed.Wait()
	}
}

// closeFile writes every record still queued to the file and stops the
// writer; records added later are kept in memory only. Call it before
// closing the file.
func (r *recorder) closeFile() {
	r.mu.Lock()
	m := r.file
	if m == nil {
		r.mu.Unlock()
		return
	}
	m.closing = true
	m.work.Signal()
	r.mu.Unlock()
	<-m.done
}

func (r *recorder) snapshot() ([]Record, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Record(nil), r.records...), r.changed
}

// Records returns everything recorded so far, in order.
func (s *Server) Records() []Record {
	recs, _ := s.rec.snapshot()
	return recs
}

// ReceivedMessages returns the messages the server received with the given
// method ("" for every message), in order.
func (s *Server) ReceivedMessages(method string) []Record {
	return filter(s.Records(), func(r Record) bool {
		return r.Kind == Received && (method == "" || r.Method == method)
	})
}

// WaitFor waits until a record satisfying match exists and returns the
// first such record, or returns ctx's error.
func (s *Server) WaitFor(ctx context.Context, match func(Record) bool) (Record, error) {
	for {
		recs, changed := s.rec.snapshot()
		for _, r := range recs {
			if match(r) {
				return r, nil
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return Record{}, fmt.Errorf("mcptest: waiting for a record: %w", context.Cause(ctx))
		}
	}
}

// ReadRecords reads the records a server wrote to a file (see the -record
// flag of [Main]).
func ReadRecords(path string) ([]Record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var recs []Record
	dec := json.NewDecoder(bytes.NewReader(data))
	for dec.More() {
		var r Record
		if err := dec.Decode(&r); err != nil {
			return recs, fmt.Errorf("mcptest: reading records: %w", err)
		}
		recs = append(recs, r)
	}
	return recs, nil
}

func filter(recs []Record, keep func(Record) bool) []Record {
	var out []Record
	for _, r := range recs {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}
