// Package sse reads and writes Server-Sent Events (the text/event-stream
// format of the HTML standard) as MCP's HTTP transports use them: each event
// carries one JSON-RPC message, and an event can name its id (for
// resumption) and a reconnection delay.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// ErrEventTooLarge is matched by the error returned for an event whose
// data exceeds the reader's limit, an [*EventTooLargeError].
var ErrEventTooLarge = errors.New("sse: event too large")

// EventTooLargeError reports an event whose data exceeds the reader's
// limit. The event was skipped to its end without being buffered whole, so
// the stream stays in step and the next event can be read. Head and Tail
// are the first 4 KiB and the last 256 bytes of its data, so that a caller
// can tell what it was (the id of the response it carried); they are valid
// until the next call.
type EventTooLargeError struct {
	Max        int
	Head, Tail []byte
}

func (e *EventTooLargeError) Error() string {
	return fmt.Sprintf("sse: event too large: more than %d bytes", e.Max)
}

// Is makes the error match ErrEventTooLarge.
func (e *EventTooLargeError) Is(target error) bool { return target == ErrEventTooLarge }

// How much of an oversize event's data is kept.
const (
	oversizeHead = 4 << 10
	oversizeTail = 256
)

// Event is one dispatched event.
type Event struct {
	// Type is the event type; empty means "message".
	Type string
	// ID is the last event id seen on the stream, as the standard defines
	// it: it persists across events until a new id field changes it.
	ID string
	// Data is the event's data, its lines joined by "\n".
	Data []byte
	// Retry is the reconnection delay the server asked for with this
	// event, or zero.
	Retry time.Duration
}

// Reader reads events from a stream.
type Reader struct {
	r      *bufio.Reader
	max    int
	lastID string
	// lineTail is the end of the last line readLine cut short; head and
	// tail are what is kept of the data of an event too large.
	lineTail, head, tail []byte
}

// NewReader returns a reader of events whose data is at most max bytes.
func NewReader(r io.Reader, max int) *Reader {
	// A small buffer: a reader lives as long as a call's response stream,
	// and longer lines are assembled from it as they come.
	return &Reader{r: bufio.NewReaderSize(r, 4<<10), max: max}
}

// Reset discards what r has buffered and makes it read from src, with its
// buffer and limit, as a new reader would; the last event id starts empty.
// A nil src drops r's hold on the stream it read.
func (r *Reader) Reset(src io.Reader) {
	r.r.Reset(src)
	r.lastID = ""
}

// Next returns the next event. Events with no data lines (such as a bare
// priming "id:" event) are returned too, with nil Data, so a caller can
// track the last event id and retry delay. It returns io.EOF at the end of
// the stream; an event not terminated by a blank line is discarded, as the
// standard says. An event whose data is larger than the limit is skipped
// to its end, and an *EventTooLargeError returned for it.
func (r *Reader) Next() (Event, error) {
	var ev Event
	var data []byte
	hasData, hasField, tooLarge := false, false, false
	for {
		line, cut, err := r.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return Event{}, io.EOF
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if tooLarge {
				return Event{}, &EventTooLargeError{Max: r.max, Head: r.head, Tail: r.tail}
			}
			if !hasField {
				continue
			}
			ev.ID = r.lastID
			if hasData {
				ev.Data = data
			}
			return ev, nil
		}
		if line[0] == ':' {
			continue // a comment, such as a keep-alive
		}
		name, value, found := bytes.Cut(line, []byte(":"))
		if found && len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		hasField = true
		switch string(name) {
		case "data":
			if tooLarge {
				r.tail = keepTail(r.tail, []byte("\n"))
				r.tail = keepTail(r.tail, value)
			} else {
				if hasData {
					data = append(data, '\n')
				}
				if !cut && len(data)+len(value) <= r.max {
					data = append(data, value...)
					hasData = true
					break
				}
				// Too large: keep its ends, skip the rest of the event.
				tooLarge = true
				r.head = append(r.head[:0], data[:min(len(data), oversizeHead)]...)
				r.head = append(r.head, value[:min(len(value), max(oversizeHead-len(r.head), 0))]...)
				r.tail = keepTail(keepTail(r.tail[:0], data), value)
				data = nil
			}
			hasData = true
			if cut {
				r.tail = keepTail(r.tail, r.lineTail)
			}
		case "event":
			ev.Type = eventType(value)
		case "id":
			if !bytes.ContainsRune(value, 0) && string(value) != r.lastID {
				r.lastID = string(value)
			}
		case "retry":
			if ms, err := strconv.ParseUint(string(value), 10, 32); err == nil {
				ev.Retry = time.Duration(ms) * time.Millisecond
			}
		}
	}
}

// eventType returns t as a string, without a copy for the types MCP
// servers send.
func eventType(t []byte) string {
	switch string(t) {
	case "message":
		return "message"
	case "endpoint":
		return "endpoint"
	}
	return string(t)
}

// readLine returns one line without its terminator (LF or CRLF; a lone CR,
// which no MCP server sends, is not taken as a line end). A line longer
// than the data limit plus some slack is cut: only its first 4 KiB are
// returned, with cut set, its last bytes are in lineTail, and the rest is
// skipped, never buffered, so a hostile stream cannot make the reader
// buffer without bound.
//
// The line is valid until the next read: a line that fits the buffer (all
// of an MCP server's, but for long data) is the buffer's own bytes, not a
// copy; Next copies what it keeps.
func (r *Reader) readLine() (line []byte, cut bool, err error) {
	for first := true; ; first = false {
		chunk, err := r.r.ReadSlice('\n')
		switch {
		case cut:
			r.lineTail = keepTail(r.lineTail, chunk)
		case first && err == nil:
			line = chunk
		default:
			line = append(line, chunk...)
		}
		if !cut && len(line) > r.max+64 {
			cut = true
			head := min(len(line), oversizeHead)
			r.lineTail = keepTail(r.lineTail[:0], line[head:])
			line = line[:head]
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if (len(line) > 0 || cut) && errors.Is(err, io.EOF) {
				return nil, false, io.ErrUnexpectedEOF
			}
			return nil, false, err
		}
		break
	}
	if cut {
		r.lineTail = bytes.TrimSuffix(r.lineTail, []byte("\n"))
		r.lineTail = bytes.TrimSuffix(r.lineTail, []byte("\r"))
		return line, true, nil
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	return line, false, nil
}

// keepTail appends b to tail and keeps the last oversizeTail bytes.
func keepTail(tail, b []byte) []byte {
	if len(b) >= oversizeTail {
		return append(tail[:0], b[len(b)-oversizeTail:]...)
	}
	tail = append(tail, b...)
	if drop := len(tail) - oversizeTail; drop > 0 {
		tail = tail[:copy(tail, tail[drop:])]
	}
	return tail
}

// WriteEvent writes one event with the given id (if any) and data, which
// must not contain a newline (JSON from encoding/json never does).
func WriteEvent(w io.Writer, id string, data []byte) error {
	var b bytes.Buffer
	if id != "" {
		b.WriteString("id: ")
		b.WriteString(id)
		b.WriteByte('\n')
	}
	b.WriteString("event: message\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
	_, err := w.Write(b.Bytes())
	return err
}
