// Package jsonscan reads JSON in one pass, validating it exactly as
// encoding/json does, for the fast paths that decode the usual shape of a
// message without reflection: a caller reads the fields it knows, skips
// the rest with Value, and leaves any shape it does not handle to
// encoding/json (which then also words the error).
package jsonscan

import (
	"bytes"
	"unicode/utf8"
)

// MaxDepth is how deeply Value follows nested values; a deeper one is not
// taken (encoding/json's own limit is 10,000).
const MaxDepth = 64

// Scanner reads JSON from Data, starting at Pos, accepting exactly what
// encoding/json's scanner accepts. Each method reports false, with Pos
// somewhere past the start, for what it does not take.
type Scanner struct {
	Data []byte
	Pos  int
}

// Peek returns the next byte, or 0 at the end.
func (s *Scanner) Peek() byte {
	if s.Pos < len(s.Data) {
		return s.Data[s.Pos]
	}
	return 0
}

// Next returns the next byte, or 0 at the end, and moves past it.
func (s *Scanner) Next() byte {
	c := s.Peek()
	s.Pos++
	return c
}

// Consume moves past the next byte if it is c, and reports whether it was.
func (s *Scanner) Consume(c byte) bool {
	if s.Peek() != c {
		return false
	}
	s.Pos++
	return true
}

// WS skips JSON whitespace.
func (s *Scanner) WS() {
	for s.Pos < len(s.Data) {
		switch s.Data[s.Pos] {
		case ' ', '\t', '\n', '\r':
			s.Pos++
		default:
			return
		}
	}
}

// PlainString reads a string with no escapes and only ASCII, and returns
// its contents; plain false means it is not such a string (or not a
// string). Its contents are what encoding/json would decode, so the
// caller may use them as is.
func (s *Scanner) PlainString() (v []byte, plain bool) {
	if !s.Consume('"') {
		return nil, false
	}
	start := s.Pos
	for s.Pos < len(s.Data) {
		c := s.Data[s.Pos]
		switch {
		case c == '"':
			v = s.Data[start:s.Pos]
			s.Pos++
			return v, true
		case c < 0x20 || c == '\\' || c >= 0x80:
			return nil, false
		}
		s.Pos++
	}
	return nil, false
}

// Value skips one valid JSON value, nested at most MaxDepth deep.
func (s *Scanner) Value() bool { return s.value(0) }

func (s *Scanner) value(depth int) bool {
	switch c := s.Peek(); {
	case c == '{':
		return s.object(depth + 1)
	case c == '[':
		return s.array(depth + 1)
	case c == '"':
		return s.anyString()
	case c == '-' || c >= '0' && c <= '9':
		return s.Number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return false
}

func (s *Scanner) object(depth int) bool {
	if depth > MaxDepth {
		return false
	}
	s.Pos++ // '{'
	s.WS()
	if s.Consume('}') {
		return true
	}
	for {
		s.WS()
		if s.Peek() != '"' || !s.anyString() {
			return false
		}
		s.WS()
		if !s.Consume(':') {
			return false
		}
		s.WS()
		if !s.value(depth) {
			return false
		}
		s.WS()
		switch s.Next() {
		case ',':
		case '}':
			return true
		default:
			return false
		}
	}
}

func (s *Scanner) array(depth int) bool {
	if depth > MaxDepth {
		return false
	}
	s.Pos++ // '['
	s.WS()
	if s.Consume(']') {
		return true
	}
	for {
		s.WS()
		if !s.value(depth) {
			return false
		}
		s.WS()
		switch s.Next() {
		case ',':
		case ']':
			return true
		default:
			return false
		}
	}
}

// anyString skips a string: any bytes but control characters, with valid
// escapes. Invalid UTF-8 passes, as encoding/json's scanner lets it.
func (s *Scanner) anyString() bool {
	s.Pos++ // '"'
	for s.Pos < len(s.Data) {
		c := s.Data[s.Pos]
		s.Pos++
		switch {
		case c == '"':
			return true
		case c < 0x20:
			return false
		case c == '\\':
			switch s.Next() {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				for range 4 {
					if !isHex(s.Next()) {
						return false
					}
				}
			default:
				return false
			}
		}
	}
	return false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// Number skips a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *Scanner) Number() bool {
	s.Consume('-')
	switch c := s.Peek(); {
	case c == '0':
		s.Pos++
	case c >= '1' && c <= '9':
		s.digits()
	default:
		return false
	}
	if s.Consume('.') && !s.digits() {
		return false
	}
	if c := s.Peek(); c == 'e' || c == 'E' {
		s.Pos++
		if c := s.Peek(); c == '+' || c == '-' {
			s.Pos++
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

// digits skips one or more digits and reports whether there was one.
func (s *Scanner) digits() bool {
	start := s.Pos
	for c := s.Peek(); c >= '0' && c <= '9'; c = s.Peek() {
		s.Pos++
	}
	return s.Pos > start
}

func (s *Scanner) literal(lit string) bool {
	if !bytes.HasPrefix(s.Data[s.Pos:], []byte(lit)) {
		return false
	}
	s.Pos += len(lit)
	return true
}

// Text reads a string that encoding/json would decode to its bytes as
// they are — no escapes, valid UTF-8 — and returns its contents; ok false
// means it is not such a string (or not a string).
func (s *Scanner) Text() (v []byte, ok bool) {
	if !s.Consume('"') {
		return nil, false
	}
	start := s.Pos
	ascii := true
	for s.Pos < len(s.Data) {
		c := s.Data[s.Pos]
		switch {
		case c == '"':
			v = s.Data[start:s.Pos]
			s.Pos++
			return v, ascii || utf8.Valid(v)
		case c < 0x20 || c == '\\':
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		s.Pos++
	}
	return nil, false
}
