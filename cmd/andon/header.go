package main

import (
	"fmt"
	"net/http"
	"strings"
)

// headerFlags collects the repeatable --header 'Name: value' flag: static
// headers sent with every HTTP request to the server. They often carry a
// credential, so a value is never printed — not in an error, not by -h,
// not in a log — and neither is a malformed flag, which may be nothing but
// a credential missing its name.
type headerFlags struct {
	raw []string
}

// String is empty: flag prints it as the default in -h, and a default must
// never show a header.
func (h *headerFlags) String() string { return "" }

// Set records one --header. It never fails: the flag package would quote
// the rejected value in its error. header validates them all instead.
func (h *headerFlags) Set(s string) error {
	h.raw = append(h.raw, s)
	return nil
}

// header parses the flags into headers. Its errors name a flag by its
// position and, once the name is known to be well-formed, by its name;
// never by its value.
func (h *headerFlags) header() (http.Header, error) {
	if len(h.raw) == 0 {
		return nil, nil
	}
	hdr := make(http.Header, len(h.raw))
	for i, s := range h.raw {
		name, value, ok := strings.Cut(s, ":")
		name = strings.TrimSpace(name)
		if !ok || !isToken(name) {
			return nil, fmt.Errorf("--header #%d is not 'Name: value' with a valid header name (not shown: it may hold a secret)", i+1)
		}
		name = http.CanonicalHeaderKey(name)
		if managedHeader(name) {
			return nil, fmt.Errorf("--header %s: andon or net/http sets this header itself", name)
		}
		value = strings.TrimSpace(value)
		if !isFieldValue(value) {
			return nil, fmt.Errorf("--header %s: the value holds a control character (value not shown)", name)
		}
		hdr.Add(name, value)
	}
	return hdr, nil
}

// managedHeader reports a header (canonical form) that the MCP transport or
// net/http sets: one given with --header would be overridden or would break
// the exchange, so it is refused instead.
func managedHeader(name string) bool {
	switch name {
	case "Accept", "Content-Type", "Content-Length", "Transfer-Encoding", "Host",
		"Connection", "Upgrade", "Te", "Trailer", "Keep-Alive", "Proxy-Connection",
		"Mcp-Session-Id", "Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name", "Last-Event-Id":
		return true
	}
	return false
}

// isToken reports whether s is an HTTP field name (RFC 9110 token).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// isFieldValue reports whether s may be sent as an HTTP field value: no
// control character but horizontal tab (a CR or LF would split the header).
func isFieldValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
