package main

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/andonhq/andon/mcp"
)

func TestRenderProgress(t *testing.T) {
	t.Parallel()
	tests := []struct {
		p     mcp.Progress
		width int
		want  string
	}{
		{mcp.Progress{Progress: 0, Total: 4}, 80, "[------------------------]   0%"},
		{mcp.Progress{Progress: 1, Total: 4, Message: "step 1"}, 80, "[######------------------]  25% step 1"},
		{mcp.Progress{Progress: 4, Total: 4}, 80, "[########################] 100%"},
		{mcp.Progress{Progress: 9, Total: 4}, 80, "[########################] 100%"},
		{mcp.Progress{Progress: -1, Total: 4}, 80, "[------------------------]   0%"},
		{mcp.Progress{Progress: 7}, 80, "progress 7"},
		{mcp.Progress{Progress: 2.5, Message: "working"}, 80, "progress 2.5 working"},
		// Never wider than the terminal, or "\r" could not redraw it.
		{mcp.Progress{Progress: 1, Message: strings.Repeat("é", 100)}, 20, "progress 1 éééééééé"},
		// A server cannot drive the terminal.
		{mcp.Progress{Progress: 1, Message: "a\x1b]0;pwned\x07b\nc\x9bd"}, 80, `progress 1 a\x1b]0;pwned\x07b c\x9bd`},
	}
	for _, tt := range tests {
		got := renderProgress(tt.p, tt.width)
		if got != tt.want {
			t.Errorf("renderProgress(%+v, %d) = %q, want %q", tt.p, tt.width, got, tt.want)
		}
		if n := utf8.RuneCountInString(got); n > tt.width-1 {
			t.Errorf("renderProgress(%+v, %d) is %d wide", tt.p, tt.width, n)
		}
	}
}

// TestProgressBarSharesTheLine: a log line written while the bar is up goes
// above it, and the bar is drawn again below; clear leaves an empty line.
func TestProgressBarSharesTheLine(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	bar := &progressBar{w: &out, width: func() int { return 80 }}
	bar.Write([]byte("before\n"))
	bar.update(mcp.Progress{Progress: 1, Total: 2})
	bar.Write([]byte("log line\n"))
	bar.clear()
	bar.clear() // idempotent
	line := "[############------------]  50%"
	want := "before\n" +
		"\r" + line + "\x1b[K" +
		"\r\x1b[K" + "log line\n" + "\r" + line +
		"\r\x1b[K"
	if out.String() != want {
		t.Errorf("terminal got\n%q\nwant\n%q", out.String(), want)
	}
}
