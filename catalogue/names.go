package catalogue

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// MaxNameLen is the longest local tool name: model APIs accept names that
// match ^[a-zA-Z0-9_-]{1,64}$.
const MaxNameLen = 64

// LocalName is the name under which the tool called tool on server is
// offered to models: "mcp_<server>_<tool>", with every character a model API
// would refuse replaced by "_". A name longer than 64 characters is cut, and
// ends in "_" and 8 hex digits of a hash of the tool's full name, so that
// long names that share a beginning stay apart.
//
// Different tools can still map to one local name ("a.b" and "a_b"; or
// server "x" with tool "y_z" and server "x_y" with tool "z"): the catalogue
// refuses such a configuration rather than let one tool shadow another.
func LocalName(server, tool string) string {
	var b strings.Builder
	b.Grow(len("mcp__") + len(server) + len(tool))
	b.WriteString("mcp_")
	writeSanitized(&b, server)
	b.WriteByte('_')
	writeSanitized(&b, tool)
	name := b.String()
	if len(name) <= MaxNameLen {
		return name
	}
	sum := sha256.Sum256([]byte(tool))
	suffix := "_" + hex.EncodeToString(sum[:4])
	return name[:MaxNameLen-len(suffix)] + suffix
}

func writeSanitized(b *strings.Builder, s string) {
	for _, r := range s {
		if r < 0x80 && (r == '_' || r == '-' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
}

// remoteRef names a tool on a server, for error messages.
type remoteRef struct{ server, tool string }

func (r remoteRef) String() string { return fmt.Sprintf("tool %q of server %q", r.tool, r.server) }

// nameCollisionError reports two tools that map to one local name.
type nameCollisionError struct {
	local string
	a, b  remoteRef
}

func (e *nameCollisionError) Error() string {
	return fmt.Sprintf("catalogue: %s and %s would both be offered as %q; disable one of the servers (enabled: false)", e.a, e.b, e.local)
}

// Is makes a collision match [ErrNameCollision].
func (e *nameCollisionError) Is(target error) bool { return target == ErrNameCollision }
