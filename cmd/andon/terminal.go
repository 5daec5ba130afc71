package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// Text that a server, a model or a stored row controls never reaches a
// terminal raw (invariant 13). Rather than trust every print to remember,
// run wraps each command's stdout and stderr in a terminalWriter: whatever
// path a server's words take to the screen (a tool's result, an error's
// message, a stored step, a log line), they cannot move the cursor, clear
// the screen, set the window title, erase a line or reorder one. printable
// is the same escaping for text that must also stay on one line: a table
// cell, a field, an error.
//
// What is shown visibly, and how:
//
//   - C0 controls but newline and tab (BEL, ESC, backspace …) as \xHH, CR as
//     \r; "\r\n" is a line end and prints as "\n";
//   - DEL, the C1 controls U+0080 to U+009F (U+009B is CSI to a terminal
//     that takes 8-bit controls), the bidi controls (U+061C, U+200E, U+200F,
//     U+202A to U+202E, U+2066 to U+2069: they make a terminal show text in
//     an order other than its own) and the line and paragraph separators
//     U+2028, U+2029 as \uXXXX;
//   - a byte that is not UTF-8 as \xHH.
//
// The \uXXXX forms are JSON's escapes of the same characters, and JSON
// never holds a raw C0 control or a byte that is not UTF-8: --json output
// passes through a terminalWriter still valid, and decodes to the same
// values. encoding/json escapes the C0 controls itself (ESC as \u001b) and
// U+2028, U+2029, but not DEL, the C1 controls or the bidi controls: those
// the writer escapes.
//
// The escaping is for eyes, not reversible: a server's literal text `\x1b`
// looks like an escaped ESC. andon's own control sequences, the progress
// bar's "\r" and erase-line, are written to the terminal beside the writer
// (env.tty), never through it.

// escapedRune reports whether r, valid UTF-8 and not ASCII but DEL, is
// shown as \uXXXX.
func escapedRune(r rune) bool {
	switch {
	case r == 0x7f, r >= 0x80 && r <= 0x9f: // DEL, C1
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069: // bidi
		return true
	case r == 0x2028, r == 0x2029: // line and paragraph separators
		return true
	}
	return false
}

// appendEscaped appends p to dst escaped for a terminal (see above). With
// lines, newline and tab are kept, for text of many lines; without, each of
// newline, tab and "\r\n" becomes a space, for one line.
func appendEscaped(dst, p []byte, lines bool) []byte {
	const hex = "0123456789abcdef"
	for i := 0; i < len(p); {
		b := p[i]
		switch {
		case b >= 0x20 && b < 0x7f:
			dst = append(dst, b)
			i++
			continue
		case b == '\n' || b == '\t' || b == '\r' && i+1 < len(p) && p[i+1] == '\n':
			if b == '\r' {
				i++ // "\r\n" is one line end
			}
			if lines {
				dst = append(dst, p[i])
			} else {
				dst = append(dst, ' ')
			}
			i++
			continue
		case b == '\r':
			dst = append(dst, `\r`...)
			i++
			continue
		case b < 0x20:
			dst = append(dst, '\\', 'x', hex[b>>4], hex[b&0xf])
			i++
			continue
		}
		r, size := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, '\\', 'x', hex[b>>4], hex[b&0xf])
		case escapedRune(r):
			dst = fmt.Appendf(dst, `\u%04x`, r)
		default:
			dst = append(dst, p[i:i+size]...)
		}
		i += size
	}
	return dst
}

// plain reports whether p is printed as it is: printable ASCII, newlines
// and tabs only.
func plain(p []byte) bool {
	for _, b := range p {
		if (b < 0x20 && b != '\n' && b != '\t') || b >= 0x7f {
			return false
		}
	}
	return true
}

// printable makes s safe to print as one line: escaped as a terminalWriter
// escapes, with newlines and tabs as spaces, and no space around it.
func printable(s string) string {
	s = strings.TrimSpace(s)
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 || b >= 0x7f {
			return string(appendEscaped(make([]byte, 0, len(s)+8), []byte(s), false))
		}
	}
	return s
}

// terminalWriter escapes what is written to it on its way to w (see above),
// keeping newlines and tabs. A write that ends inside a character, or with
// a "\r" that a "\n" may follow, leaves those bytes for the next write or
// for Flush. It is safe for concurrent use.
type terminalWriter struct {
	mu   sync.Mutex
	w    io.Writer
	held []byte // at most utf8.UTFMax-1 bytes
	buf  []byte
}

// newTerminalWriter returns a terminalWriter writing to w.
func newTerminalWriter(w io.Writer) *terminalWriter {
	return &terminalWriter{w: w}
}

func (t *terminalWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	data := p
	if len(t.held) > 0 {
		data = append(append([]byte(nil), t.held...), p...)
	}
	keep := unfinished(data)
	t.held = append(t.held[:0], data[len(data)-keep:]...)
	data = data[:len(data)-keep]
	if len(data) == 0 {
		return len(p), nil
	}
	if !plain(data) {
		t.buf = appendEscaped(t.buf[:0], data, true)
		data = t.buf
	}
	if _, err := t.w.Write(data); err != nil {
		return 0, err
	}
	if cap(t.buf) > 64<<10 {
		t.buf = nil // one large write does not pin its copy
	}
	return len(p), nil
}

// Flush writes what an earlier write left unfinished: a "\r" as \r, the
// bytes of a character cut short as \xHH.
func (t *terminalWriter) Flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.held) == 0 {
		return nil
	}
	out := appendEscaped(nil, t.held, true)
	t.held = t.held[:0]
	_, err := t.w.Write(out)
	return err
}

// unfinished is how many bytes at the end of p the next write may finish:
// a "\r" (a line end if "\n" follows) or a character cut short.
func unfinished(p []byte) int {
	n := len(p)
	if n > 0 && p[n-1] == '\r' {
		return 1
	}
	for i := 1; i < utf8.UTFMax && i <= n; i++ {
		b := p[n-i]
		if b < utf8.RuneSelf {
			return 0
		}
		if utf8.RuneStart(b) {
			if utf8.FullRune(p[n-i:]) {
				return 0
			}
			return i
		}
	}
	return 0
}
