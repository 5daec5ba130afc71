package main

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
)

// jsonLevels is how many levels of nesting printed JSON is indented to:
// the commands' own structure (a page, a run, its steps). Deeper values —
// a run's request, a call's arguments, a server's result, as a caller or
// a server gave them — are printed compact.
const jsonLevels = 3

// writeJSONTo writes v to w as JSON indented to jsonLevels, and a newline;
// escapeHTML as json.Encoder's.
func writeJSONTo(w io.Writer, v any, escapeHTML bool) error {
	var compact bytes.Buffer
	enc := json.NewEncoder(&compact)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(v); err != nil {
		return err
	}
	var out bytes.Buffer
	indentTo(&out, bytes.TrimSuffix(compact.Bytes(), []byte("\n")), "", jsonLevels)
	out.WriteByte('\n')
	_, err := out.WriteTo(w)
	return err
}

// indentTo writes src, compact JSON, to dst as json.Indent(dst, src,
// prefix, "  ") does, but only for its first levels levels; deeper
// containers stay compact. json.Indent puts every element of a value
// nested d deep on a line of its own, 2d spaces in: printed that way, a
// value's size grows with the square of its depth. Here an element costs
// at most a newline, the prefix and 2·levels spaces.
func indentTo(dst *bytes.Buffer, src []byte, prefix string, levels int) {
	depth, inString, escaped := 0, false, false
	newline := func(d int) {
		dst.WriteByte('\n')
		dst.WriteString(prefix)
		dst.WriteString(strings.Repeat("  ", d))
	}
	for i, c := range src {
		if inString {
			dst.WriteByte(c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
			dst.WriteByte(c)
		case '{', '[':
			dst.WriteByte(c)
			depth++
			if depth <= levels && i+1 < len(src) && src[i+1] != '}' && src[i+1] != ']' {
				newline(depth)
			}
		case '}', ']':
			if depth <= levels && i > 0 && src[i-1] != '{' && src[i-1] != '[' {
				newline(depth - 1)
			}
			depth--
			dst.WriteByte(c)
		case ',':
			dst.WriteByte(c)
			if depth <= levels {
				newline(depth)
			}
		case ':':
			dst.WriteByte(c)
			if depth <= levels {
				dst.WriteByte(' ')
			}
		default:
			dst.WriteByte(c)
		}
	}
}
