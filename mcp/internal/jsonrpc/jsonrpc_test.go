package jsonrpc

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		in      string
		kind    string // request, notification, response, or error
		wantID  string
		invalid string // substring of the error
	}{
		{in: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`, kind: "request", wantID: "1"},
		{in: `{"jsonrpc":"2.0","id":"a","method":"ping"}`, kind: "request", wantID: `"a"`},
		{in: `{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`, kind: "notification"},
		{in: `{"jsonrpc":"2.0","id":7,"result":{}}`, kind: "response", wantID: "7"},
		{in: `{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no"}}`, kind: "response", wantID: "7"},
		{in: `{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse"}}`, kind: "response"},
		{in: `not json`, invalid: "not a JSON object"},
		{in: `[{"jsonrpc":"2.0","id":1,"result":{}}]`, invalid: "not a JSON object"},
		{in: `{"jsonrpc":"1.0","id":1,"result":{}}`, invalid: "jsonrpc is", wantID: "1"},
		{in: `{"jsonrpc":"2.0","id":1}`, invalid: "exactly one", wantID: "1"},
		{in: `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}`, invalid: "exactly one", wantID: "1"},
		{in: `{"jsonrpc":"2.0","id":1.5,"result":{}}`, invalid: "neither a string nor an integer"},
		{in: `{"jsonrpc":"2.0","result":{}}`, invalid: "without an id"},
		{in: `{"jsonrpc":"2.0","id":1,"method":"x","result":{}}`, invalid: "carries a result", wantID: "1"},
	}
	for _, tt := range tests {
		m, err := Decode([]byte(tt.in))
		if tt.invalid != "" {
			var de *DecodeError
			if !errors.As(err, &de) || !strings.Contains(err.Error(), tt.invalid) {
				t.Errorf("Decode(%s) = %v, want a DecodeError containing %q", tt.in, err, tt.invalid)
				continue
			}
			if tt.wantID != "" && de.ID.String() != tt.wantID {
				t.Errorf("Decode(%s) error id = %s, want %s", tt.in, de.ID, tt.wantID)
			}
			continue
		}
		if err != nil {
			t.Errorf("Decode(%s): %v", tt.in, err)
			continue
		}
		kind := map[bool]string{true: "request"}[m.IsRequest()] + map[bool]string{true: "notification"}[m.IsNotification()] + map[bool]string{true: "response"}[m.IsResponse()]
		if kind != tt.kind {
			t.Errorf("Decode(%s) is a %s, want %s", tt.in, kind, tt.kind)
		}
		if tt.wantID != "" && m.ID.String() != tt.wantID {
			t.Errorf("Decode(%s) id = %s, want %s", tt.in, m.ID, tt.wantID)
		}
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	for _, m := range []*Message{
		{ID: Int(3), Method: "tools/call", Params: []byte(`{"name":"x"}`)},
		{Method: "notifications/cancelled", Params: []byte(`{"requestId":3}`)},
		{ID: String("s"), Result: []byte(`{"ok":true}`)},
		{ID: Int(4), Error: &Error{Code: -1, Message: "m"}},
	} {
		data, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.ContainsRune(data, '\n') {
			t.Errorf("Encode(%+v) contains a newline", m)
		}
		got, err := Decode(data)
		if err != nil {
			t.Fatalf("Decode(Encode(%+v)): %v", m, err)
		}
		if got.ID != m.ID || got.Method != m.Method {
			t.Errorf("round trip %+v -> %+v", m, got)
		}
	}
}

func TestFrameReader(t *testing.T) {
	in := "{\"a\":1}\n\n  \r\n{\"b\":2}\r\n" + strings.Repeat("x", 100) + "\n{\"c\":3}"
	fr := NewFrameReader(iotest.OneByteReader(strings.NewReader(in)), 50)
	var got []string
	for {
		f, err := fr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, ErrFrameTooLarge) {
			got = append(got, "TOO LARGE")
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(f))
	}
	want := []string{`{"a":1}`, `{"b":2}`, "TOO LARGE", `{"c":3}`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("frames = %q, want %q", got, want)
	}
}

// FuzzDecode: any bytes give a message or a DecodeError, never a panic, and
// a decoded message re-encodes to something that decodes the same way.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":"a","result":{"content":[]}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`,
		`[]`, `{}`, `{"id":99999999999999999999}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("Decode error %T is not a *DecodeError", err)
			}
			return
		}
		again, err := Encode(m)
		if err != nil {
			t.Fatalf("Encode of a decoded message: %v", err)
		}
		m2, err := Decode(again)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", again, err)
		}
		if m2.ID != m.ID || m2.Method != m.Method || m2.IsResponse() != m.IsResponse() {
			t.Fatalf("round trip changed the message: %+v vs %+v", m, m2)
		}
	})
}

// FuzzFrameReader: frames never exceed the limit, and the reader always ends.
func FuzzFrameReader(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n{\"b\":2}\n"), 8)
	f.Add([]byte("\n\n\r\nxx"), 1)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if max <= 0 || max > 1<<16 {
			return
		}
		fr := NewFrameReader(bytes.NewReader(data), max)
		for range len(data) + 2 {
			frame, err := fr.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if errors.Is(err, ErrFrameTooLarge) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(frame) > max {
				t.Fatalf("frame of %d bytes exceeds the limit %d", len(frame), max)
			}
			if bytes.ContainsRune(frame, '\n') {
				t.Fatalf("frame contains a newline")
			}
		}
		t.Fatalf("reader did not reach EOF")
	})
}
