package api

import (
	"net/http"

	"github.com/andonhq/andon/token"
)

// Identity is who a request acts as (GET /v1/whoami): what a console shows,
// and what it may offer (an operator's Cancel on its own runs only).
type Identity struct {
	// Name is the identity: the owner of the runs it starts.
	Name string `json:"name"`
	// Role is what it may do.
	Role token.Role `json:"role"`
	// TokenID is the token's id; empty on a server without tokens.
	TokenID string `json:"token_id,omitempty"`
}

// whoami is GET /v1/whoami.
func (s *server) whoami(w http.ResponseWriter, r *http.Request) {
	p, _ := r.Context().Value(principalKey{}).(*principal)
	id := Identity{Name: p.actor.ID, Role: p.role}
	if p.token != nil {
		id.TokenID = p.token.ID
	}
	writeJSON(w, http.StatusOK, id)
}
