package jsonrpc

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// An oversize frame is skipped and reported with the id of the response it
// carried, wherever the encoder put the id, and the next frame is read.
func TestFrameTooLargeNamesItsResponse(t *testing.T) {
	big := `"` + strings.Repeat("x", 100<<10) + `"`
	frames := []struct {
		frame string
		want  ID // invalid: none may be named
	}{
		{`{"jsonrpc":"2.0","id":7,"result":{"text":` + big + `}}`, Int(7)},
		{`{"result":{"text":` + big + `},"jsonrpc":"2.0","id":8}`, Int(8)},
		{`{"result":{"text":` + big + `},"jsonrpc":"2.0", "id" : "s-9" }` + "\r", String("s-9")},
		{`{"jsonrpc":"2.0","id":10,"error":{"code":1,"message":` + big + `}}`, Int(10)},
		// Requests and notifications from the peer: their ids are not ours.
		{`{"jsonrpc":"2.0","id":11,"method":"sampling/createMessage","params":{"x":` + big + `}}`, ID{}},
		{`{"method":"m","params":{"x":` + big + `},"jsonrpc":"2.0","id":12}`, ID{}},
		// Text that only looks like an id at the end, and no id at all.
		{`{"result":{"text":` + big + `,"id":13}}`, ID{}},
		{`{"result":{"text":"` + strings.Repeat("x", 100<<10) + `,\"id\":14"}}`, ID{}},
		{`{"jsonrpc":"2.0","result":` + big + `}`, ID{}},
		{strings.Repeat("y", 100<<10), ID{}},
	}
	var in strings.Builder
	for _, f := range frames {
		in.WriteString(f.frame + "\n")
	}
	in.WriteString(`{"jsonrpc":"2.0","id":99,"result":{}}` + "\n")
	fr := NewFrameReader(iotest.HalfReader(strings.NewReader(in.String())), 64<<10)
	for i, f := range frames {
		_, err := fr.Next()
		var tl *FrameTooLargeError
		if !errors.As(err, &tl) || !errors.Is(err, ErrFrameTooLarge) || tl.Max != 64<<10 {
			t.Fatalf("frame %d: Next = %v, want a *FrameTooLargeError with Max 65536", i, err)
		}
		if tl.ID != f.want {
			t.Errorf("frame %d: ID = %v (valid %v), want %v (valid %v)", i, tl.ID, tl.ID.IsValid(), f.want, f.want.IsValid())
		}
	}
	frame, err := fr.Next()
	if err != nil || string(frame) != `{"jsonrpc":"2.0","id":99,"result":{}}` {
		t.Fatalf("the frame after = %q, %v", frame, err)
	}
	if _, err := fr.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("at the end: %v, want EOF", err)
	}
}
