package jsonrpc

import "bytes"

// scanMessage is Decode's fast path: one pass over the plain shape that
// almost every message has (the six envelope keys spelled as the spec
// spells them, each at most once; a plain "2.0", method and string id, or
// an integer id; params and result objects or other non-null values; no
// error object), validating every byte as encoding/json's scanner would.
// It makes one copy, of the params or result, where encoding/json's decode
// into wireMessage checks the whole message, decodes it by reflection, and
// copies the raw value again.
//
// ok false means only "not the plain shape": the caller decodes data with
// encoding/json, which then gives the result or the error, so the fast path
// never has to reproduce an error message or an unusual case (a key in
// another case, a duplicate key, escapes, null, an error object, a deeply
// nested value). It never accepts what encoding/json would reject, and
// decodes what it accepts as encoding/json would: FuzzScanMatchesReference
// holds it to that.
func scanMessage(data []byte) (m *Message, ok bool) {
	s := scanner{data: data}
	if !s.consume('{') {
		return nil, false
	}
	var (
		msg                     Message
		version, method, id     []byte
		params, result          []byte
		seen                    uint8
		idIsString, hasMoreKeys bool
	)
	s.ws()
	if s.peek() == '}' {
		s.i++
	} else {
		hasMoreKeys = true
	}
	for hasMoreKeys {
		s.ws()
		key, plain := s.str()
		if !plain {
			return nil, false
		}
		s.ws()
		if !s.consume(':') {
			return nil, false
		}
		s.ws()
		field := fieldOf(key)
		if field == fieldOther && foldsToField(key) {
			return nil, false // encoding/json matches keys case-insensitively
		}
		if field != fieldOther {
			if seen&(1<<field) != 0 {
				return nil, false // a duplicate: leave "last one wins" to encoding/json
			}
			seen |= 1 << field
		}
		switch field {
		case fieldJSONRPC, fieldMethod:
			v, plain := s.str()
			if !plain {
				return nil, false
			}
			if field == fieldJSONRPC {
				version = v
			} else {
				method = v
			}
		case fieldID:
			switch c := s.peek(); {
			case c == '"':
				v, plain := s.str()
				if !plain {
					return nil, false
				}
				id, idIsString = v, true
			case c == '-' || c >= '0' && c <= '9':
				start := s.i
				if !s.number() {
					return nil, false
				}
				id = data[start:s.i]
			default:
				return nil, false // null, or not an id: encoding/json says what
			}
		case fieldParams, fieldResult:
			if s.peek() == 'n' {
				return nil, false // null
			}
			start := s.i
			if !s.value(0) {
				return nil, false
			}
			if field == fieldParams {
				params = data[start:s.i]
			} else {
				result = data[start:s.i]
			}
		case fieldError:
			return nil, false // an error response: not the hot path
		default:
			if !s.value(0) {
				return nil, false
			}
		}
		s.ws()
		switch s.next() {
		case ',':
		case '}':
			hasMoreKeys = false
		default:
			return nil, false
		}
	}
	if s.i != len(data) {
		return nil, false // Decode trimmed the input: anything after is not JSON
	}
	if string(version) != Version {
		return nil, false // encoding/json's path words the error
	}
	if id != nil {
		if idIsString {
			msg.ID = String(string(id))
		} else {
			n, ok := parseInt(id)
			if !ok {
				return nil, false
			}
			msg.ID = Int(n)
		}
	}
	msg.Method = string(method)
	// One copy: the frame's buffer is the reader's, reused for the next.
	switch {
	case params != nil && result != nil:
		both := append(make([]byte, 0, len(params)+len(result)), params...)
		both = append(both, result...)
		msg.Params, msg.Result = both[:len(params):len(params)], both[len(params):]
	case params != nil:
		msg.Params = bytes.Clone(params)
	case result != nil:
		msg.Result = bytes.Clone(result)
	}
	return &msg, true
}

// The envelope's fields, as bits of scanMessage's seen set.
const (
	fieldJSONRPC = iota
	fieldID
	fieldMethod
	fieldParams
	fieldResult
	fieldError
	fieldOther
)

// fieldNames are the envelope's keys, as wireMessage's tags spell them.
var fieldNames = [...]string{fieldJSONRPC: "jsonrpc", fieldID: "id", fieldMethod: "method", fieldParams: "params", fieldResult: "result", fieldError: "error"}

func fieldOf(key []byte) int {
	for f, name := range fieldNames {
		if string(key) == name {
			return f
		}
	}
	return fieldOther
}

// foldsToField reports whether key matches an envelope key other than
// exactly: encoding/json would take it for that field.
func foldsToField(key []byte) bool {
	for _, name := range fieldNames {
		if len(key) == len(name) && bytes.EqualFold(key, []byte(name)) {
			return true
		}
	}
	return false // a non-ASCII key (which could fold too) is never plain
}

// parseInt parses a JSON integer as strconv.ParseInt does, without
// converting to a string first; false for a fraction, an exponent or an
// overflow, which ID.UnmarshalJSON rejects.
func parseInt(b []byte) (int64, bool) {
	neg := false
	if b[0] == '-' {
		neg, b = true, b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	switch {
	case !neg && n > 1<<63-1, neg && n > 1<<63:
		return 0, false
	case neg:
		return -int64(n), true
	}
	return int64(n), true
}

// maxScanDepth is how deeply the fast path follows nested values; deeper
// ones are left to encoding/json (whose own limit is 10,000).
const maxScanDepth = 64

// scanner validates JSON as encoding/json's scanner does, over data.
type scanner struct {
	data []byte
	i    int
}

func (s *scanner) peek() byte {
	if s.i < len(s.data) {
		return s.data[s.i]
	}
	return 0
}

func (s *scanner) next() byte {
	c := s.peek()
	s.i++
	return c
}

func (s *scanner) consume(c byte) bool {
	if s.peek() != c {
		return false
	}
	s.i++
	return true
}

// ws skips JSON whitespace.
func (s *scanner) ws() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// str reads a string with no escapes and only ASCII, and returns its
// contents; plain false means it is not such a string (or not a string).
func (s *scanner) str() (v []byte, plain bool) {
	if !s.consume('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.data) {
		c := s.data[s.i]
		switch {
		case c == '"':
			v = s.data[start:s.i]
			s.i++
			return v, true
		case c < 0x20 || c == '\\' || c >= 0x80:
			return nil, false
		}
		s.i++
	}
	return nil, false
}

// value skips one valid JSON value.
func (s *scanner) value(depth int) bool {
	switch c := s.peek(); {
	case c == '{':
		return s.object(depth + 1)
	case c == '[':
		return s.array(depth + 1)
	case c == '"':
		return s.anyString()
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return false
}

func (s *scanner) object(depth int) bool {
	if depth > maxScanDepth {
		return false
	}
	s.i++ // '{'
	s.ws()
	if s.consume('}') {
		return true
	}
	for {
		s.ws()
		if s.peek() != '"' || !s.anyString() {
			return false
		}
		s.ws()
		if !s.consume(':') {
			return false
		}
		s.ws()
		if !s.value(depth) {
			return false
		}
		s.ws()
		switch s.next() {
		case ',':
		case '}':
			return true
		default:
			return false
		}
	}
}

func (s *scanner) array(depth int) bool {
	if depth > maxScanDepth {
		return false
	}
	s.i++ // '['
	s.ws()
	if s.consume(']') {
		return true
	}
	for {
		s.ws()
		if !s.value(depth) {
			return false
		}
		s.ws()
		switch s.next() {
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
func (s *scanner) anyString() bool {
	s.i++ // '"'
	for s.i < len(s.data) {
		c := s.data[s.i]
		s.i++
		switch {
		case c == '"':
			return true
		case c < 0x20:
			return false
		case c == '\\':
			switch s.next() {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				for range 4 {
					if !isHex(s.next()) {
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

// number skips a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	s.consume('-')
	switch c := s.peek(); {
	case c == '0':
		s.i++
	case c >= '1' && c <= '9':
		s.digits()
	default:
		return false
	}
	if s.consume('.') && !s.digits() {
		return false
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.i++
		if c := s.peek(); c == '+' || c == '-' {
			s.i++
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

// digits skips one or more digits and reports whether there was one.
func (s *scanner) digits() bool {
	start := s.i
	for c := s.peek(); c >= '0' && c <= '9'; c = s.peek() {
		s.i++
	}
	return s.i > start
}

func (s *scanner) literal(lit string) bool {
	if !bytes.HasPrefix(s.data[s.i:], []byte(lit)) {
		return false
	}
	s.i += len(lit)
	return true
}
