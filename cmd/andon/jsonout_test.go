package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// Printed JSON is indented as json.Indent indents it down to jsonLevels,
// and compact below: a value nested 64 deep (a run's request at the limit,
// inside a page of runs) prints at about its own size, not the square of
// its depth, and still reads back as the same JSON.
func TestPrintedJSONIsIndentedOnlyNearTheTop(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		`{}`, `[]`, `{"a":[]}`, `[{"id":"r","n":1,"ok":true,"x":null},{"s":"a,b:{c}[d]\"e\\"}]`,
		`{"runs":[{"id":"r1","request":[]}],"next_before":"r1"}`,
	} {
		var got, want bytes.Buffer
		indentTo(&got, []byte(src), "  ", jsonLevels)
		if err := json.Indent(&want, []byte(src), "  ", "  "); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("indentTo(%s) =\n%s\nwant (json.Indent)\n%s", src, got.String(), want.String())
		}
	}
	deep := strings.Repeat("[", 64) + strings.Repeat("]", 64)
	src := `[{"id":"r1","request":{"prompt":"p","script":` + deep + `}}]`
	var out bytes.Buffer
	if err := writeJSONTo(&out, json.RawMessage(src), true); err != nil {
		t.Fatal(err)
	}
	var back bytes.Buffer
	if err := json.Compact(&back, out.Bytes()); err != nil || back.String() != src {
		t.Fatalf("printed %q, which reads back as %q (%v), want %q", out.String(), back.String(), err, src)
	}
	if out.Len() > 2*len(src) {
		t.Errorf("printed %d bytes for %d bytes of JSON: a deep value is re-indented\n%s", out.Len(), len(src), out.String())
	}
}
