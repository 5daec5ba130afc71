// Package jsonrpc holds the JSON-RPC 2.0 wire format that MCP speaks: message
// values, request ids, error codes, and the newline-delimited framing used on
// stdio and other byte streams. It validates what it decodes, so everything
// above it can trust a [Message]'s shape.
package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Version is the only JSON-RPC version MCP uses.
const Version = "2.0"

// Standard JSON-RPC and MCP error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603

	// CodeHeaderMismatch, CodeMissingClientCapability and
	// CodeUnsupportedProtocolVersion are defined by MCP 2026-07-28.
	CodeHeaderMismatch             = -32020
	CodeMissingClientCapability    = -32021
	CodeUnsupportedProtocolVersion = -32022
)

// ID is a JSON-RPC request id: a string or an integer, never null.
// The zero ID is invalid and marks a notification.
type ID struct {
	str   string
	num   int64
	isStr bool
	valid bool
}

// Int returns the integer id n.
func Int(n int64) ID { return ID{num: n, valid: true} }

// String returns the string id s.
func String(s string) ID { return ID{str: s, isStr: true, valid: true} }

// IsValid reports whether id is set (the message is a request or response).
func (id ID) IsValid() bool { return id.valid }

// Int64 returns the integer value of id and whether id is an integer.
func (id ID) Int64() (int64, bool) { return id.num, id.valid && !id.isStr }

// String formats id for logs and errors.
func (id ID) String() string {
	switch {
	case !id.valid:
		return "<none>"
	case id.isStr:
		return strconv.Quote(id.str)
	default:
		return strconv.FormatInt(id.num, 10)
	}
}

// MarshalJSON encodes id as a JSON string or number.
func (id ID) MarshalJSON() ([]byte, error) {
	switch {
	case !id.valid:
		return []byte("null"), nil
	case id.isStr:
		return json.Marshal(id.str)
	default:
		return strconv.AppendInt(nil, id.num, 10), nil
	}
}

// UnmarshalJSON decodes a JSON string or integer. Null, floats and other
// types are rejected: MCP ids are never null.
func (id *ID) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || bytes.Equal(data, []byte("null")) {
		return errors.New("id is null")
	}
	if data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return fmt.Errorf("id: %w", err)
		}
		*id = String(s)
		return nil
	}
	n, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil {
		return fmt.Errorf("id %s is neither a string nor an integer", truncate(data))
	}
	*id = Int(n)
	return nil
}

// Error is the error object of a JSON-RPC error response.
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Message is one JSON-RPC message: a request (ID and Method), a notification
// (Method only) or a response (ID and exactly one of Result and Error).
type Message struct {
	ID     ID
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *Error
}

// IsRequest reports whether m is a request.
func (m *Message) IsRequest() bool { return m.Method != "" && m.ID.valid }

// IsNotification reports whether m is a notification.
func (m *Message) IsNotification() bool { return m.Method != "" && !m.ID.valid }

// IsResponse reports whether m is a response.
func (m *Message) IsResponse() bool { return m.Method == "" }

// wireMessage is the union of every message shape, as it appears on the wire.
type wireMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      *ID             `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Encode returns the JSON encoding of m, without a trailing newline.
//
// The envelope is written directly rather than through encoding/json: the
// params and result are already JSON (the caller marshalled them, or they
// were validated when decoded), and marshalling a json.RawMessage would parse
// and compact them again on every message.
func Encode(m *Message) ([]byte, error) {
	b := make([]byte, 0, 64+len(m.Params)+len(m.Result)) // room for the framing newline too
	b = append(b, `{"jsonrpc":"2.0"`...)
	if m.ID.valid {
		b = append(b, `,"id":`...)
		if m.ID.isStr {
			b = appendString(b, m.ID.str)
		} else {
			b = strconv.AppendInt(b, m.ID.num, 10)
		}
	} else if m.IsResponse() {
		b = append(b, `,"id":null`...)
	}
	if m.Method != "" {
		b = append(b, `,"method":`...)
		b = appendString(b, m.Method)
		if len(m.Params) > 0 {
			b = append(b, `,"params":`...)
			b = append(b, m.Params...)
		}
		return append(b, '}'), nil
	}
	if m.Error != nil {
		e, err := json.Marshal(m.Error)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"error":`...)
		b = append(b, e...)
		return append(b, '}'), nil
	}
	b = append(b, `,"result":`...)
	if len(m.Result) == 0 {
		b = append(b, `{}`...)
	} else {
		b = append(b, m.Result...)
	}
	return append(b, '}'), nil
}

// appendString appends s as a JSON string: directly when it needs no
// escaping (method names and ids almost never do), else via encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// A DecodeError says why bytes are not a valid JSON-RPC message. When the
// message's id could be read, ID holds it, so the error can be routed to the
// request it concerns.
type DecodeError struct {
	ID     ID
	Reason string
}

func (e *DecodeError) Error() string {
	if e.ID.valid {
		return fmt.Sprintf("invalid JSON-RPC message (id %s): %s", e.ID, e.Reason)
	}
	return "invalid JSON-RPC message: " + e.Reason
}

// Decode parses and validates one JSON-RPC message. Batches are rejected:
// no MCP revision that andon speaks allows them on the wire from a server.
// The usual shape takes one pass (scanMessage); anything else, errors
// included, is encoding/json's to decode.
func Decode(data []byte) (*Message, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, &DecodeError{Reason: "not a JSON object: " + truncate(data)}
	}
	m, ok := scanMessage(data)
	if !ok {
		var w wireMessage
		if err := json.Unmarshal(data, &w); err != nil {
			return nil, &DecodeError{Reason: err.Error()}
		}
		m = &Message{Method: w.Method, Params: w.Params, Result: w.Result, Error: w.Error}
		if w.ID != nil {
			m.ID = *w.ID
		}
		if w.JSONRPC != Version {
			return nil, &DecodeError{ID: m.ID, Reason: fmt.Sprintf("jsonrpc is %q, want %q", w.JSONRPC, Version)}
		}
	}
	fail := func(reason string) (*Message, error) { return nil, &DecodeError{ID: m.ID, Reason: reason} }
	if m.Method != "" {
		if m.Result != nil || m.Error != nil {
			return fail("a request or notification carries a result or error")
		}
		return m, nil
	}
	if (m.Result == nil) == (m.Error == nil) {
		return fail("a response needs exactly one of result and error")
	}
	if !m.ID.valid && m.Result != nil {
		return fail("a result without an id")
	}
	return m, nil
}

// truncate shortens data for an error message; servers can send megabytes.
func truncate(data []byte) string {
	const max = 64
	if len(data) > max {
		return strconv.Quote(string(data[:max])) + "…"
	}
	return strconv.Quote(string(data))
}
