package mcp

import (
	"mime"
	"testing"
)

// contentMediaType answers what mime.ParseMediaType would, fast path or not.
func TestMediaTypeIsParseMediaTypes(t *testing.T) {
	for _, v := range []string{
		"text/event-stream", "application/json", "application/json; charset=utf-8",
		"Text/Event-Stream", "text/event-stream;", "text/html", "", "garbage",
		"application/json;charset", " application/json",
	} {
		want, _, _ := mime.ParseMediaType(v)
		if got := contentMediaType(v); got != want {
			t.Errorf("contentMediaType(%q) = %q, want %q as mime.ParseMediaType says", v, got, want)
		}
	}
}
