package mcp

// fixedHeaders are the values of the headers that every request of one
// HTTP connection carries, made once and shared by its requests: setting
// them with Header.Set cost an allocation each per request (two for
// MCP-Protocol-Version, whose key Set canonicalises anew). Sharing is safe
// because no one writes to a request's header values in place: net/http
// only reads them, and a RoundTripper that changes headers (an egress
// transport injecting a credential) changes a clone of the request, whose
// values are copies. Each slice has no spare capacity, so that even an
// Add to a shared key copies it first.
type fixedHeaders struct {
	accept      []string
	contentType []string
	// session is the Mcp-Session-Id value once the server gave one.
	session []string
	// protocolVersion is the MCP-Protocol-Version value of the revision
	// versionName, the one the connection negotiates.
	protocolVersion []string
	versionName     string
}

func newFixedHeaders() fixedHeaders {
	return fixedHeaders{
		accept:      []string{"application/json, text/event-stream"},
		contentType: []string{"application/json"},
	}
}

// version returns the MCP-Protocol-Version value for revision name: the
// shared one for the revision the connection speaks, a fresh one for
// another (a request before the handshake settles names its own).
func (h *fixedHeaders) version(name string) []string {
	if name == h.versionName {
		return h.protocolVersion
	}
	return []string{name}
}
