package jsonrpc

import (
	"bytes"

	"github.com/andonhq/andon/mcp/internal/jsonscan"
)

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
	s := jsonscan.Scanner{Data: data}
	if !s.Consume('{') {
		return nil, false
	}
	var (
		msg                     Message
		version, method, id     []byte
		params, result          []byte
		seen                    uint8
		idIsString, hasMoreKeys bool
	)
	s.WS()
	if s.Peek() == '}' {
		s.Pos++
	} else {
		hasMoreKeys = true
	}
	for hasMoreKeys {
		s.WS()
		key, plain := s.PlainString()
		if !plain {
			return nil, false
		}
		s.WS()
		if !s.Consume(':') {
			return nil, false
		}
		s.WS()
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
			v, plain := s.PlainString()
			if !plain {
				return nil, false
			}
			if field == fieldJSONRPC {
				version = v
			} else {
				method = v
			}
		case fieldID:
			switch c := s.Peek(); {
			case c == '"':
				v, plain := s.PlainString()
				if !plain {
					return nil, false
				}
				id, idIsString = v, true
			case c == '-' || c >= '0' && c <= '9':
				start := s.Pos
				if !s.Number() {
					return nil, false
				}
				id = data[start:s.Pos]
			default:
				return nil, false // null, or not an id: encoding/json says what
			}
		case fieldParams, fieldResult:
			if s.Peek() == 'n' {
				return nil, false // null
			}
			start := s.Pos
			if !s.Value() {
				return nil, false
			}
			if field == fieldParams {
				params = data[start:s.Pos]
			} else {
				result = data[start:s.Pos]
			}
		case fieldError:
			return nil, false // an error response: not the hot path
		default:
			if !s.Value() {
				return nil, false
			}
		}
		s.WS()
		switch s.Next() {
		case ',':
		case '}':
			hasMoreKeys = false
		default:
			return nil, false
		}
	}
	if s.Pos != len(data) {
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
