package api

import (
	"net/http"

	"github.com/andonhq/andon/token"
)

// Routes returns the routes registered on an API handler: pattern → the
// least role it needs ("" for anyone).
func Routes(h http.Handler) map[string]token.Role {
	out := map[string]token.Role{}
	for _, r := range h.(*handler).routes {
		out[r.pattern] = r.least
	}
	return out
}
