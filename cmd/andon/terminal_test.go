package main

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostile is text a server, a model or a stored row might send to take
// over a terminal: set the window title (OSC 0, ended by BEL), clear the
// screen, go back to the start of the line and erase it to print a fake
// verdict, an 8-bit CSI (U+009B), a right-to-left override and a bidi
// isolate that reorder what follows, and DEL.
const hostile = "\x1b]0;TITLE\x07\x1b[2J\r\x1b[Kfake: success \u009b31m\u202eevil\u2069\x7f"

// hostileVisible is hostile as a terminalWriter prints it.
const hostileVisible = `\x1b]0;TITLE\x07\x1b[2J\r\x1b[Kfake: success \u009b31m\u202eevil\u2069\u007f`

func TestEscaping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, lines, oneLine string
	}{
		{"plain text", "plain text", "plain text"},
		{"two\nlines\tand a tab", "two\nlines\tand a tab", "two lines and a tab"},
		{hostile, hostileVisible, hostileVisible},
		{"\x1b]0;TITLE\x07", `\x1b]0;TITLE\x07`, `\x1b]0;TITLE\x07`},
		{"ok\r\x1b[Kfake: success", `ok\r\x1b[Kfake: success`, `ok\r\x1b[Kfake: success`},
		{"dos\r\nline ends\r\n", "dos\nline ends\n", "dos line ends "},
		{"\r\r\n", "\\r\n", ""}, // printable trims space, CR and newline included
		{"\x00\x08\x0b\x0c\x1f", `\x00\x08\x0b\x0c\x1f`, `\x00\x08\x0b\x0c\x1f`},
		{"csi \u009b and \u0080", `csi \u009b and \u0080`, `csi \u009b and \u0080`},
		{"a \u202ab\u202bc\u202cd\u202de\u202ef", `a \u202ab\u202bc\u202cd\u202de\u202ef`, `a \u202ab\u202bc\u202cd\u202de\u202ef`},
		{"\u2066\u2067\u2068\u2069\u200e\u200f\u061c", `\u2066\u2067\u2068\u2069\u200e\u200f\u061c`, `\u2066\u2067\u2068\u2069\u200e\u200f\u061c`},
		{"line\u2028para\u2029", `line\u2028para\u2029`, `line\u2028para`}, // U+2029 is space to TrimSpace
		{"not UTF-8: \xff\xfe \xe2\x82", `not UTF-8: \xff\xfe \xe2\x82`, `not UTF-8: \xff\xfe \xe2\x82`},
		// What people write stays as it is: accents, scripts, emoji
		// (with their joiners), a no-break space, a replacement character.
		{"é 日本語 👩\u200d💻 a\u00a0b \ufffd", "é 日本語 👩\u200d💻 a\u00a0b \ufffd", "é 日本語 👩\u200d💻 a\u00a0b \ufffd"},
		{`C:\path\x1b`, `C:\path\x1b`, `C:\path\x1b`},
	}
	for _, tt := range tests {
		if got := string(appendEscaped(nil, []byte(tt.in), true)); got != tt.lines {
			t.Errorf("appendEscaped(%q, lines) = %q, want %q", tt.in, got, tt.lines)
		}
		if got := printable(tt.in); got != strings.TrimSpace(tt.oneLine) {
			t.Errorf("printable(%q) = %q, want %q", tt.in, got, strings.TrimSpace(tt.oneLine))
		}
		// Escaping is idempotent: what it prints, it prints again as it is.
		if again := string(appendEscaped(nil, []byte(tt.lines), true)); again != tt.lines {
			t.Errorf("escaping %q twice gives %q", tt.lines, again)
		}
		if again := printable(printable(tt.in)); again != printable(tt.in) {
			t.Errorf("printable twice of %q gives %q", tt.in, again)
		}
	}
}

// TestTerminalWriterSplits: however a text is cut into writes (a character
// or a "\r\n" across two writes, a byte at a time), the writer prints what
// it prints of the whole; Flush prints what a last write left unfinished.
func TestTerminalWriterSplits(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		hostile + "\n",
		"dos\r\nline\r\n",
		"ends with CR\r",
		"é 日本語 👩\u200d💻\u202e",
		"cut short \xe2\x82",
		"\xf0\x9f\x91",
	} {
		want := string(appendEscaped(nil, []byte(in), true))
		for cut := 0; cut <= len(in); cut++ {
			var out bytes.Buffer
			w := newTerminalWriter(&out)
			for _, part := range []string{in[:cut], in[cut:]} {
				if n, err := w.Write([]byte(part)); n != len(part) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", part, n, err)
				}
			}
			w.Flush()
			if out.String() != want {
				t.Errorf("%q written as %q and %q: printed %q, want %q", in, in[:cut], in[cut:], out.String(), want)
			}
		}
		var out bytes.Buffer
		w := newTerminalWriter(&out)
		for i := range len(in) {
			w.Write([]byte{in[i]})
		}
		w.Flush()
		if out.String() != want {
			t.Errorf("%q written a byte at a time: printed %q, want %q", in, out.String(), want)
		}
	}
}

// TestJSONThroughTheWriter: --json output goes through the same writer.
// encoding/json escapes the C0 controls (ESC as \u001b, BEL as \u0007, CR
// as \r) and U+2028, but leaves DEL, the C1 controls and the bidi controls
// raw; the writer escapes those as JSON does its own, so the output is
// still JSON, decodes to the same value, and holds none of them raw.
func TestJSONThroughTheWriter(t *testing.T) {
	t.Parallel()
	v := map[string]any{"text": hostile + "\u2028", "list": []any{hostile, 1.5, true}}
	var direct bytes.Buffer
	if err := writeJSON(&direct, v); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`\u001b]0;TITLE\u0007`, `\r`, `\u2028`} {
		if !strings.Contains(direct.String(), want) {
			t.Errorf("encoding/json did not escape %s: %q", want, direct.String())
		}
	}
	if !strings.Contains(direct.String(), "\u202e") || !strings.Contains(direct.String(), "\u009b") {
		t.Errorf("encoding/json escaped the bidi and C1 controls itself (then the writer's part here is moot): %q", direct.String())
	}
	var out bytes.Buffer
	w := newTerminalWriter(&out)
	if err := writeJSON(w, v); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	checkNeutralised(t, "JSON", out.String())
	var got any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("the writer broke the JSON: %v\n%s", err, out.String())
	}
	var want any
	json.Unmarshal(direct.Bytes(), &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("through the writer the JSON decodes to %q, want %q", got, want)
	}
}

// checkNeutralised fails the test if out holds anything of hostile that
// drives a terminal (ESC, BEL, a CR, the byte 0x9b of an 8-bit CSI, the
// bidi controls, DEL, a byte that is not UTF-8), or lacks hostile's title
// sequence in a visible form: as a terminalWriter shows it, or as JSON
// escapes it.
func checkNeutralised(t *testing.T, what, out string) {
	t.Helper()
	var raw []string
	for _, bad := range []struct{ name, seq string }{
		{"ESC", "\x1b"}, {"BEL", "\x07"}, {"CR", "\r"}, {"the byte 0x9b (CSI)", "\x9b"},
		{"U+202E (RLO)", "\u202e"}, {"U+2069 (PDI)", "\u2069"}, {"DEL", "\x7f"},
	} {
		if strings.Contains(out, bad.seq) {
			raw = append(raw, bad.name)
		}
	}
	if !utf8.ValidString(out) {
		raw = append(raw, "bytes that are not UTF-8")
	}
	if len(raw) > 0 {
		t.Errorf("%s: the output holds %s raw:\n%q", what, strings.Join(raw, ", "), out)
	}
	if !strings.Contains(out, `\x1b]0;TITLE\x07`) && !strings.Contains(out, `\u001b]0;TITLE\u0007`) {
		t.Errorf("%s: the output does not show the server's escape sequence visibly:\n%q", what, out)
	}
}
