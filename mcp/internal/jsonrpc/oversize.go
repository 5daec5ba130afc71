package jsonrpc

import (
	"bytes"

	"github.com/andonhq/andon/mcp/internal/jsonscan"
)

// OversizeID finds the id of the response carried by a frame too large to
// read whole, from the frame's first bytes (head) and its last (tail).
// Most encoders write the envelope's short keys first
// ({"jsonrpc":"2.0","id":7,"result":…}): the head is read key by key up to
// the large value. One that writes the id last
// ({"result":…,"jsonrpc":"2.0","id":7}, as the TypeScript SDK does) is
// read from the end. ok is false when no id was found, or when the frame
// is not known to be a response: one with a method or params key is a
// request or a notification, whose id is the peer's own, not one of the
// reader's requests.
func OversizeID(head, tail []byte) (id ID, ok bool) {
	s := jsonscan.Scanner{Data: head}
	s.WS()
	if !s.Consume('{') {
		return ID{}, false
	}
	response, found := false, false
	for {
		s.WS()
		key, plain := s.PlainString()
		if !plain {
			break
		}
		s.WS()
		if !s.Consume(':') {
			break
		}
		s.WS()
		switch string(key) {
		case "method", "params":
			return ID{}, false
		case "result", "error":
			response = true
		}
		start := s.Pos
		if !s.Value() {
			break // the large value, cut off
		}
		if string(key) == "id" && id.UnmarshalJSON(head[start:s.Pos]) == nil {
			found = true
		}
		s.WS()
		if !s.Consume(',') {
			break
		}
	}
	switch {
	case !response:
		return ID{}, false
	case found:
		return id, true
	}
	return tailID(tail)
}

// tailID reads the id of an object whose last key is "id": one that ends
// ,"id":7} or ,"id":"a"}. Only the object's own closing brace can follow
// its last value, so a nested object's "id" (two braces) or a string that
// holds such text (escaped quotes) does not match.
func tailID(tail []byte) (ID, bool) {
	const ws = " \t\r\n"
	t := bytes.TrimRight(tail, ws)
	if !bytes.HasSuffix(t, []byte("}")) {
		return ID{}, false
	}
	t = bytes.TrimRight(t[:len(t)-1], ws)
	start := len(t)
	if bytes.HasSuffix(t, []byte(`"`)) {
		start = bytes.LastIndexByte(t[:len(t)-1], '"')
		if start < 0 || bytes.IndexByte(t[start:], '\\') >= 0 {
			return ID{}, false
		}
	} else {
		for start > 0 && (t[start-1] >= '0' && t[start-1] <= '9' || t[start-1] == '-') {
			start--
		}
	}
	value := t[start:]
	before := bytes.TrimRight(t[:start], ws)
	if len(value) == 0 || !bytes.HasSuffix(before, []byte(":")) {
		return ID{}, false
	}
	before = bytes.TrimRight(before[:len(before)-1], ws)
	if !bytes.HasSuffix(before, []byte(`"id"`)) {
		return ID{}, false
	}
	before = bytes.TrimRight(before[:len(before)-len(`"id"`)], ws)
	var id ID
	if !bytes.HasSuffix(before, []byte(",")) || id.UnmarshalJSON(value) != nil {
		return ID{}, false
	}
	return id, true
}
