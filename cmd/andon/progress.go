package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
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
// as a log handler does) escaped as a terminalWriter escapes it, and draws
// the bar again below. The bar's own "\r" and erase-line are andon's, not
// escaped; its line is (renderProgress).
func (b *progressBar) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.line != "" {
		io.WriteString(b.w, "\r\x1b[K")
	}
	_, err := b.w.Write(appendEscaped(nil, p, true))
	if b.line != "" {
		io.WriteString(b.w, "\r"+b.line)
	}
	if err != nil {
		return 0, err
	}
	return len(p), nil
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
