package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/andonhq/andon/mcp"
)

// progressBar draws a call's progress on the last line of a terminal. It is
// also the writer the logger uses while the bar is up, so that a log line is
// printed above the bar instead of through it.
type progressBar struct {
	mu    sync.Mutex
	w     io.Writer
	width func() int
	line  string // what is drawn now; "" when nothing is
}

// newProgressBar returns a bar on the terminal f.
func newProgressBar(f *os.File) *progressBar {
	return &progressBar{w: f, width: func() int {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
		return 80
	}}
}

// update redraws the bar. It is the call's OnProgress.
func (b *progressBar) update(p mcp.Progress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.line = renderProgress(p, b.width())
	io.WriteString(b.w, "\r"+b.line+"\x1b[K")
}

// clear erases the bar, leaving the cursor at the start of an empty line.
func (b *progressBar) clear() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.line != "" {
		io.WriteString(b.w, "\r\x1b[K")
		b.line = ""
	}
}

// Write prints p above the bar: it erases the bar, writes p (whole lines,
// as a log handler does) and draws the bar again below.
func (b *progressBar) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.line != "" {
		io.WriteString(b.w, "\r\x1b[K")
	}
	n, err := b.w.Write(p)
	if b.line != "" {
		io.WriteString(b.w, "\r"+b.line)
	}
	return n, err
}

// barCells is the width of the bar itself, in characters.
const barCells = 24

// renderProgress returns the bar's line for p, at most width-1 characters
// wide: a line that wraps could not be redrawn in place with "\r".
func renderProgress(p mcp.Progress, width int) string {
	var s string
	if p.Total > 0 {
		frac := p.Progress / p.Total
		if math.IsNaN(frac) || frac < 0 {
			frac = 0
		}
		frac = min(frac, 1)
		n := int(frac * barCells)
		s = fmt.Sprintf("[%s%s] %3d%%", strings.Repeat("#", n), strings.Repeat("-", barCells-n), int(frac*100))
	} else {
		// No total: the protocol only promises the number grows.
		s = "progress " + strconv.FormatFloat(p.Progress, 'f', -1, 64)
	}
	if msg := printable(p.Message); msg != "" {
		s += " " + msg
	}
	if limit := width - 1; limit > 0 && utf8.RuneCountInString(s) > limit {
		s = string([]rune(s)[:limit])
	}
	return s
}

// printable makes a message from the server safe to put on a terminal: a
// server must not be able to move the cursor, change colours or the window
// title, so every control character becomes a space or '?'.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return ' '
		case r == utf8.RuneError || !unicode.IsPrint(r):
			return '?'
		}
		return r
	}, strings.TrimSpace(s))
}
