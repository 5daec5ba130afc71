package api

import "net/http"

// Routes returns the routes registered on an API handler: pattern → the
// least role it needs ("" for anyone).
func Routes(h http.Handler) map[string]Role {
	out := map[string]Role{}
	for _, r := range h.(*handler).routes {
		out[r.pattern] = r.least
	}
	return out
}
