package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestReader(t *testing.T) {
	in := ": keep-alive\n\nid: 1\nretry: 500\ndata:\n\n" +
		"event: message\ndata: {\"a\":1}\n\n" +
		"data: line1\r\ndata:line2\r\n\r\n" +
		"id: 7\ndata: x\n\n" +
		"data: unterminated"
	r := NewReader(iotest.OneByteReader(strings.NewReader(in)), 1024)
	want := []Event{
		{ID: "1", Retry: 500 * time.Millisecond, Data: []byte{}},
		{Type: "message", ID: "1", Data: []byte(`{"a":1}`)},
		{ID: "1", Data: []byte("line1\nline2")},
		{ID: "7", Data: []byte("x")},
	}
	for i, w := range want {
		ev, err := r.Next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if ev.Type != w.Type || ev.ID != w.ID || ev.Retry != w.Retry || !bytes.Equal(ev.Data, w.Data) {
			t.Errorf("event %d = %+v (data %q), want %+v (data %q)", i, ev, ev.Data, w, w.Data)
		}
	}
	if _, err := r.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("after the unterminated event: err = %v, want io.ErrUnexpectedEOF", err)
	}
}

func TestReaderLimits(t *testing.T) {
	r := NewReader(strings.NewReader("data: "+strings.Repeat("x", 100)+"\n\n"), 50)
	if _, err := r.Next(); !errors.Is(err, ErrEventTooLarge) {
		t.Errorf("oversized event: %v, want ErrEventTooLarge", err)
	}
	r = NewReader(strings.NewReader(strings.Repeat("data: 0123456789\n", 10)+"\n"), 50)
	if _, err := r.Next(); !errors.Is(err, ErrEventTooLarge) {
		t.Errorf("oversized multi-line event: %v, want ErrEventTooLarge", err)
	}
}

// An event too large is skipped to its end, never buffered whole: its
// error holds the first and last bytes of its data, and the next event is
// read.
func TestReaderSkipsAnEventTooLarge(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	for _, tc := range []struct{ name, event, head, tail string }{
		{"one line", "data: {" + long + "}\n\n", "{xxx", "xxx}"},
		{"lines", "data: {\n" + strings.Repeat("data: "+long[:1000]+"\n", 200) + "data: }\r\n\r\n", "{\nxxx", "xxx\n}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := "id: 1\n" + tc.event + "id: 2\ndata: next\n\n"
			r := NewReader(iotest.HalfReader(strings.NewReader(in)), 64<<10)
			_, err := r.Next()
			var tl *EventTooLargeError
			if !errors.As(err, &tl) || !errors.Is(err, ErrEventTooLarge) || tl.Max != 64<<10 {
				t.Fatalf("Next = %v, want an *EventTooLargeError", err)
			}
			if len(tl.Head) > 4<<10 || len(tl.Tail) > 256 || !strings.HasPrefix(string(tl.Head), tc.head) || !strings.HasSuffix(string(tl.Tail), tc.tail) {
				t.Errorf("kept %d bytes %.8q… and %d bytes …%q", len(tl.Head), tl.Head, len(tl.Tail), tl.Tail[max(len(tl.Tail)-8, 0):])
			}
			ev, err := r.Next()
			if err != nil || string(ev.Data) != "next" || ev.ID != "2" {
				t.Fatalf("the event after = %+v (%q), %v", ev, ev.Data, err)
			}
		})
	}
}

func TestWriteEventRoundTrip(t *testing.T) {
	var b bytes.Buffer
	WriteEvent(&b, "3", []byte(`{"x":1}`))
	WriteEvent(&b, "", []byte(`{"y":2}`))
	r := NewReader(&b, 1024)
	for _, want := range []string{`{"x":1}`, `{"y":2}`} {
		ev, err := r.Next()
		if err != nil || string(ev.Data) != want {
			t.Fatalf("Next = %q, %v; want %s", ev.Data, err, want)
		}
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("end: %v", err)
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("id: 1\ndata: {}\n\n"), 16)
	f.Add([]byte("data: a\r\ndata: b\r\n\r\n"), 4)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if max <= 0 || max > 1<<16 {
			return
		}
		r := NewReader(bytes.NewReader(data), max)
		for range len(data) + 2 {
			ev, err := r.Next()
			if err != nil {
				return
			}
			if len(ev.Data) > max {
				t.Fatalf("event data of %d bytes exceeds %d", len(ev.Data), max)
			}
		}
		t.Fatal("reader did not end")
	})
}

// TestEventsOutliveTheBuffer: an event's fields are its own, not the
// reader's buffer, which the next events overwrite.
func TestEventsOutliveTheBuffer(t *testing.T) {
	var b bytes.Buffer
	for i := range 50 {
		b.WriteString("id: " + strings.Repeat(string(rune('a'+i%26)), 3) + "\nevent: message\ndata: {\"n\":\"" + strings.Repeat(string(rune('a'+i%26)), 100) + "\"}\n\n")
	}
	r := NewReader(&b, 1<<10)
	var got []Event
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	if len(got) != 50 {
		t.Fatalf("read %d events, want 50", len(got))
	}
	for i, ev := range got {
		c := strings.Repeat(string(rune('a'+i%26)), 100)
		if string(ev.Data) != `{"n":"`+c+`"}` || ev.ID != c[:3] || ev.Type != "message" {
			t.Fatalf("event %d changed once later events were read: %+v (data %q)", i, ev, ev.Data)
		}
	}
}

// BenchmarkReader reads the events of a response stream as go-sdk's
// server writes them; allocs/op is per event.
func BenchmarkReader(b *testing.B) {
	event := []byte("event: message\nid: 1_0\ndata: {\"jsonrpc\":\"2.0\",\"id\":42,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}}\n\n")
	src := bytes.NewReader(event)
	r := NewReader(src, 1<<20)
	b.ReportAllocs()
	for b.Loop() {
		src.Reset(event)
		r.Reset(src)
		if _, err := r.Next(); err != nil {
			b.Fatal(err)
		}
	}
}
