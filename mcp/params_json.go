package mcp

import (
	"encoding/json"
	"unicode/utf8"
)

// encodeParams returns the JSON of a request's params, byte for byte what
// json.Marshal(p) returns. A tools/call of the usual shape (no task, no
// multi-round inputs) is written directly: json.Marshal spent most of its
// time reflecting over the struct and re-validating the RawMessages in it,
// which are json.Marshal's own output already (CallTool marshals the
// arguments, capabilities are marshalled once) and so are compact and
// escaped as it would write them. Every other request goes through
// json.Marshal.
func encodeParams(p requestParams) ([]byte, error) {
	if ct, ok := p.(*callToolParams); ok && len(ct.InputResponses) == 0 && len(ct.RequestState) == 0 && ct.Task == nil {
		return ct.appendJSON(make([]byte, 0, ct.sizeHint())), nil
	}
	return json.Marshal(p)
}

// sizeHint is about the size of p's JSON, so that appendJSON allocates
// once: the keys and quotes, and every value's length.
func (p *callToolParams) sizeHint() int {
	n := 32 + len(p.Name) + len(p.Arguments)
	if m := p.Meta; m != nil {
		n += 160 + len(m.ProtocolVersion) + len(m.ClientCapabilities) + len(m.ProgressToken) + len(m.LogLevel)
		if i := m.ClientInfo; i != nil {
			n += 32 + len(i.Name) + len(i.Title) + len(i.Version)
		}
		if t := m.traceMeta; t != nil {
			n += 32 + len(t.Traceparent) + len(t.Tracestate)
		}
	}
	return n
}

// appendJSON appends p as json.Marshal encodes it, for a p without task,
// inputResponses or requestState.
func (p *callToolParams) appendJSON(b []byte) []byte {
	b = append(b, '{')
	if p.Meta != nil {
		b = append(b, `"_meta":`...)
		b = p.Meta.appendJSON(b)
		b = append(b, ',')
	}
	b = append(b, `"name":`...)
	b = appendJSONString(b, p.Name)
	if len(p.Arguments) > 0 {
		b = append(b, `,"arguments":`...)
		b = append(b, p.Arguments...)
	}
	return append(b, '}')
}

// appendJSON appends m as json.Marshal encodes it.
func (m *requestMeta) appendJSON(b []byte) []byte {
	b = append(b, '{')
	n := len(b)
	field := func(name string) {
		if len(b) > n {
			b = append(b, ',')
		}
		b = append(b, name...)
	}
	if m.ProtocolVersion != "" {
		field(`"io.modelcontextprotocol/protocolVersion":`)
		b = appendJSONString(b, m.ProtocolVersion)
	}
	if len(m.ClientCapabilities) > 0 {
		field(`"io.modelcontextprotocol/clientCapabilities":`)
		b = append(b, m.ClientCapabilities...)
	}
	if i := m.ClientInfo; i != nil {
		field(`"io.modelcontextprotocol/clientInfo":{"name":`)
		b = appendJSONString(b, i.Name)
		if i.Title != "" {
			b = append(b, `,"title":`...)
			b = appendJSONString(b, i.Title)
		}
		b = append(b, `,"version":`...)
		b = appendJSONString(b, i.Version)
		b = append(b, '}')
	}
	if m.ProgressToken != "" {
		field(`"progressToken":`)
		b = appendJSONString(b, m.ProgressToken)
	}
	if m.LogLevel != "" {
		field(`"io.modelcontextprotocol/logLevel":`)
		b = appendJSONString(b, string(m.LogLevel))
	}
	if t := m.traceMeta; t != nil && t.Traceparent != "" {
		field(`"traceparent":`)
		b = appendJSONString(b, t.Traceparent)
	}
	if t := m.traceMeta; t != nil && t.Tracestate != "" {
		field(`"tracestate":`)
		b = appendJSONString(b, t.Tracestate)
	}
	return append(b, '}')
}

// appendJSONString appends s as json.Marshal encodes a string: directly
// when it is printable ASCII that needs no escape (HTML's <, > and & are
// escaped by json.Marshal), else through json.Marshal itself.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
