package oauth

import (
	"net/http"
	"strings"

	"github.com/andonhq/andon/mcp/internal/wwwauth"
)

// challenge is the Bearer challenge of a WWW-Authenticate header (RFC 6750
// §3, RFC 9728 §5.1).
type challenge struct {
	// ResourceMetadata is the resource_metadata URL, if given.
	ResourceMetadata string
	// Scopes are the scope parameter's scopes, if given.
	Scopes []string
	// Error is the error parameter, such as invalid_token or
	// insufficient_scope.
	Error string
}

// parseChallenge reads the Bearer challenge among the WWW-Authenticate
// headers of h. ok is false when there is none.
func parseChallenge(h http.Header) (c challenge, ok bool) {
	params, ok := wwwauth.Bearer(h)
	if !ok {
		return challenge{}, false
	}
	return challenge{
		ResourceMetadata: params["resource_metadata"],
		Scopes:           strings.Fields(params["scope"]),
		Error:            params["error"],
	}, true
}
