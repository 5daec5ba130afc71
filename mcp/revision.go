package mcp

import "slices"

// Protocol revisions andon speaks. A revision is named by its release date.
const (
	Version20241105 = "2024-11-05" // HTTP+SSE era
	Version20250326 = "2025-03-26" // Streamable HTTP with sessions
	Version20250618 = "2025-06-18"
	Version20251125 = "2025-11-25" // newest revision with an initialize handshake
	Version20260728 = "2026-07-28" // stateless: server/discover, per-request _meta

	// LatestVersion is the revision [Connect] tries first.
	LatestVersion = Version20260728
)

// revision is a protocol revision and what it means for the client: the
// handshake settles on one, and the code asks its flags, never its name.
// The zero revision is the one in force before the handshake has settled:
// nothing that a revision adds.
type revision struct {
	name string

	// discover: the revision is negotiated with server/discover, and has
	// no initialize handshake (a stateless revision).
	discover bool
	// metaEnvelope: every request (and notification) carries the protocol
	// version, the client's capabilities and its info in params._meta.
	metaEnvelope bool
	// mrtr: a result says its resultType, and input_required asks for
	// another round of the request (multi-round-trip requests).
	mrtr bool
	// ping: the ping method exists.
	ping bool
	// versionHeader: every HTTP request carries MCP-Protocol-Version.
	versionHeader bool
	// routingHeaders: an HTTP request carries Mcp-Method, Mcp-Name and the
	// Mcp-Param-* headers its tool's x-mcp-header annotations declare; a
	// tool with invalid annotations cannot be called right.
	routingHeaders bool
	// sessions: over Streamable HTTP, a session may have a standalone GET
	// stream, and a response stream that breaks may be resumed with
	// Last-Event-ID. (A server that answers 2024-11-05 over Streamable HTTP
	// gets the same.)
	sessions bool
	// streamCancels: over HTTP, closing a call's response stream is the
	// whole cancellation signal; notifications/cancelled is not sent (a
	// conformant server refuses it).
	streamCancels bool
	// legacySSE: pinned, the revision is spoken over the HTTP+SSE
	// transport (one GET stream, POSTs to the endpoint it names) with no
	// Streamable HTTP attempt.
	legacySSE bool
}

// revisions are the revisions andon speaks, newest first, the order in
// which negotiation prefers them. Adding a revision is adding its row. The
// table is never written.
var revisions = []revision{
	{name: Version20260728, discover: true, metaEnvelope: true, mrtr: true, versionHeader: true, routingHeaders: true, streamCancels: true},
	{name: Version20251125, ping: true, versionHeader: true, sessions: true},
	{name: Version20250618, ping: true, versionHeader: true, sessions: true},
	{name: Version20250326, ping: true, sessions: true},
	{name: Version20241105, ping: true, sessions: true, legacySSE: true},
}

// SupportedVersions returns every revision andon speaks, newest first.
func SupportedVersions() []string {
	names := make([]string, len(revisions))
	for i, r := range revisions {
		names[i] = r.name
	}
	return names
}

// lookupRevision returns the revision named name, if andon speaks it.
func lookupRevision(name string) (revision, bool) {
	for _, r := range revisions {
		if r.name == name {
			return r, true
		}
	}
	return revision{}, false
}

// newestIn returns the newest revision andon speaks that is among names and
// that want accepts, if there is one.
func newestIn(names []string, want func(revision) bool) (revision, bool) {
	for _, r := range revisions {
		if want(r) && slices.Contains(names, r.name) {
			return r, true
		}
	}
	return revision{}, false
}

// newest returns the newest revision andon speaks that want accepts.
func newest(want func(revision) bool) revision {
	for _, r := range revisions {
		if want(r) {
			return r
		}
	}
	return revision{}
}

// handshakeEra accepts a revision negotiated with initialize.
func handshakeEra(r revision) bool { return !r.discover }
