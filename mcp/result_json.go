package mcp

import (
	"bytes"
	"encoding/json"

	"github.com/andonhq/andon/mcp/internal/jsonscan"
)

// toolResult is what a tools/call's result decodes into on a session
// without tasks (callToolResponse is the one that may be a task).
type toolResult struct {
	resultKind
	CallToolResult
}

// decodeResult decodes a request's result into out as json.Unmarshal
// does. A tools/call result of the usual shape is read in one pass
// (toolResult.scan): json.Unmarshal validated the whole result before
// decoding it by reflection, and allocated for every string, slice and
// level of nesting on the way.
func decodeResult(data []byte, out result) error {
	if r, ok := out.(*toolResult); ok && r.scan(data) {
		return nil
	}
	return json.Unmarshal(data, out)
}

// The keys of a tools/call result, and of one of its content blocks.
var (
	callToolKeys = [...]string{"resultType", "inputRequests", "requestState", "content", "structuredContent", "isError", "_meta"}
	contentKeys  = [...]string{"type", "text", "data", "mimeType", "uri", "name", "resource"}
)

// keyIndex returns the index of key in keys, -1 for another key, and -2
// for one that encoding/json would match to a key without it being one
// (it folds case).
func keyIndex(keys []string, key []byte) int {
	for i, k := range keys {
		if string(key) == k {
			return i
		}
	}
	for _, k := range keys {
		if bytes.EqualFold(key, []byte(k)) {
			return -2
		}
	}
	return -1
}

// scan decodes data into r if it has the usual shape — plain keys, each
// at most once; content blocks whose strings need no unescaping; no
// inputRequests or requestState; no null — and reports whether it did.
// When it did not, r is untouched and encoding/json has it all to do: the
// errors and the unusual cases are its own. The raw values (structured
// content, _meta, a resource) share data, which is the result's alone.
func (r *toolResult) scan(data []byte) bool {
	s := jsonscan.Scanner{Data: data}
	var v toolResult
	var seen uint8
	s.WS()
	if !s.Consume('{') {
		return false
	}
	s.WS()
	if !s.Consume('}') {
		for more := true; more; {
			s.WS()
			key, plain := s.PlainString()
			if !plain {
				return false
			}
			s.WS()
			if !s.Consume(':') {
				return false
			}
			s.WS()
			k := keyIndex(callToolKeys[:], key)
			if k == -2 {
				return false
			}
			if k >= 0 {
				if seen&(1<<k) != 0 {
					return false
				}
				seen |= 1 << k
			}
			if k >= 0 && s.Peek() == 'n' {
				return false // null: encoding/json knows what each field makes of it
			}
			switch k {
			case 0: // resultType
				t, ok := s.Text()
				if !ok {
					return false
				}
				v.ResultType = internResultType(t)
			case 1, 2: // inputRequests, requestState: a multi-round result
				return false
			case 3: // content
				content, ok := scanContent(&s)
				if !ok {
					return false
				}
				v.Content = content
			case 4, 6: // structuredContent, _meta
				start := s.Pos
				if !s.Value() {
					return false
				}
				raw := json.RawMessage(data[start:s.Pos:s.Pos])
				if k == 4 {
					v.StructuredContent = raw
				} else {
					v.Meta = raw
				}
			case 5: // isError
				switch {
				case bytes.HasPrefix(data[s.Pos:], []byte("true")):
					v.IsError, s.Pos = true, s.Pos+4
				case bytes.HasPrefix(data[s.Pos:], []byte("false")):
					s.Pos += 5
				default:
					return false
				}
			default:
				if !s.Value() {
					return false
				}
			}
			s.WS()
			switch s.Next() {
			case ',':
			case '}':
				more = false
			default:
				return false
			}
		}
	}
	s.WS()
	if s.Pos != len(data) {
		return false
	}
	*r = v
	return true
}

// scanContent reads a content array of blocks of the usual shape.
func scanContent(s *jsonscan.Scanner) ([]Content, bool) {
	if !s.Consume('[') {
		return nil, false
	}
	content := []Content{}
	s.WS()
	if s.Consume(']') {
		return content, true
	}
	for {
		s.WS()
		c, ok := scanBlock(s)
		if !ok {
			return nil, false
		}
		content = append(content, c)
		s.WS()
		switch s.Next() {
		case ',':
		case ']':
			return content, true
		default:
			return nil, false
		}
	}
}

// scanBlock reads one content block of the usual shape.
func scanBlock(s *jsonscan.Scanner) (Content, bool) {
	var c Content
	var seen uint8
	if !s.Consume('{') {
		return c, false
	}
	s.WS()
	if s.Consume('}') {
		return c, true
	}
	for {
		s.WS()
		key, plain := s.PlainString()
		if !plain {
			return c, false
		}
		s.WS()
		if !s.Consume(':') {
			return c, false
		}
		s.WS()
		k := keyIndex(contentKeys[:], key)
		if k == -2 {
			return c, false
		}
		if k >= 0 {
			if seen&(1<<k) != 0 || s.Peek() == 'n' {
				return c, false // a duplicate, or null
			}
			seen |= 1 << k
		}
		switch k {
		case 6: // resource
			start := s.Pos
			if !s.Value() {
				return c, false
			}
			c.Resource = json.RawMessage(s.Data[start:s.Pos:s.Pos])
		case -1:
			if !s.Value() {
				return c, false
			}
		default:
			t, ok := s.Text()
			if !ok {
				return c, false
			}
			switch k {
			case 0:
				c.Type = internContentType(t)
			case 1:
				c.Text = string(t)
			case 2:
				c.Data = string(t)
			case 3:
				c.MIMEType = string(t)
			case 4:
				c.URI = string(t)
			case 5:
				c.Name = string(t)
			}
		}
		s.WS()
		switch s.Next() {
		case ',':
		case '}':
			return c, true
		default:
			return c, false
		}
	}
}

// internResultType returns t as a string, without a copy for the result
// types there are.
func internResultType(t []byte) string {
	for _, k := range [...]string{"complete", "task", "input_required"} {
		if string(t) == k {
			return k
		}
	}
	return string(t)
}

// internContentType returns t as a string, without a copy for the content
// types there are.
func internContentType(t []byte) string {
	for _, k := range [...]string{"text", "image", "audio", "resource_link", "resource"} {
		if string(t) == k {
			return k
		}
	}
	return string(t)
}
