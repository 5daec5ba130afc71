package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/token"
)

// An operator's cancel in one round trip to the store. The ordinary way
// reads the request's token, then cancels: two trips before the other
// processes hear of it, each across the network where the database is on
// another machine, and a hundred concurrent cancels queue a hundred token
// reads for the pool first. With a TokenCanceller (PostgreSQL) the cancel
// is first tried as one statement that reads the token and cancels only
// if that token may: the API then decides from the row it read exactly as
// the ordinary way does, and serves the request only if both agree that it
// was allowed and won. Anything else — a bad or missing token, a refusal,
// a run not found, finished or with tasks, a store error, or a verdict the
// two disagree on — goes the ordinary way, whose answers and audit rows
// are therefore the same as before.

// TokenCanceller is what a token store may offer to make a cancel and its
// token's check one statement (sqlstore's Store.TokenCanceller, on
// PostgreSQL). RunCancelByToken cancels run id, as [agent.RunCanceller]'s
// RunCancel does, if and only if the token whose hash is hash exists, is
// not revoked, has a role at least least and is an admin's or the run's
// owner's; t is that token as the statement read it, revoked or not, or
// token.ErrNotFound.
type TokenCanceller interface {
	RunCancelByToken(ctx context.Context, hash []byte, id string, least token.Role, announce bool) (t *token.Token, won, announced bool, err error)
}

// cancelByToken serves the cancel of r in one round trip if it can; false
// if the request is to go the ordinary way (nothing written).
func (s *server) cancelByToken(w http.ResponseWriter, r *http.Request, least token.Role) bool {
	if s.cfg.TokenCancel == nil || s.cfg.Tokens == nil {
		return false
	}
	secret, reason := bearerSecret(r)
	if reason != "" {
		return false
	}
	id := r.PathValue("id")
	start := s.cfg.Now()
	var (
		p      *principal
		denied string
	)
	won, err := s.cfg.Runtime.CancelRunWith(r.Context(), id, func(ctx context.Context, announce bool) (agent.Actor, bool, bool, error) {
		t, won, announced, err := s.cfg.TokenCancel.RunCancelByToken(ctx, token.Hash(secret), id, least, announce)
		if err != nil {
			return agent.Actor{}, false, false, err
		}
		p, denied = principalOf(t)
		return p.actor, won, announced, nil
	})
	took := s.cfg.Now().Sub(start)
	switch {
	case errors.Is(err, token.ErrNotFound):
		return false // the ordinary way refuses it
	case err != nil:
		s.cfg.Logger.Warn("api: cancelling with the token's check failed; trying the ordinary way", "run", id, "error", err)
		return false
	case !won:
		return false // the ordinary way says why, or cancels a run with tasks
	case denied != "" || !p.role.AtLeast(least):
		// The statement's guard let a token cancel that the API
		// refuses: the row says cancelled, and the others were told;
		// the answer is the API's, the ordinary way's.
		s.cfg.Logger.Error("api: the store cancelled a run for a token the API refuses",
			"run", id, "token", p.token.ID, "reason", denied, "role", string(p.role))
		return false
	}
	defer s.touchAlongside(r, p)()
	r = r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
	s.answerCancel(w, r, id, took, &agent.CancelReport{})
	return true
}
