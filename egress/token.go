package egress

import (
	"context"
	"net/url"

	"github.com/andonhq/andon/audit"
)

// TokenLeg describes an OAuth token request, for its audit row: a call
// made with a context from [WithTokenLeg] is recorded as one
// [audit.ActionOAuthToken] row instead of an http_call row, whatever its
// outcome. The row never carries a token, a code or a client secret: they
// travel in the request's body, which egress never records.
type TokenLeg struct {
	// Issuer is the authorization server's issuer identifier. Only its
	// scheme, host and path are recorded.
	Issuer string
	// GrantType is the request's grant_type. A grant that is not one of
	// the known ones is recorded as "other grant".
	GrantType string
}

type tokenLegKey struct{}

// WithTokenLeg returns a copy of ctx that marks the requests made with it
// as OAuth token requests of leg.
func WithTokenLeg(ctx context.Context, leg TokenLeg) context.Context {
	return context.WithValue(ctx, tokenLegKey{}, leg)
}

func tokenLegFrom(ctx context.Context) (TokenLeg, bool) {
	leg, ok := ctx.Value(tokenLegKey{}).(TokenLeg)
	return leg, ok
}

// knownGrant reports whether an oauth_token row names grant; any other is
// "other grant", so that Reason stays a fixed literal.
func knownGrant(grant string) bool {
	switch grant {
	case "authorization_code", "refresh_token", "client_credentials",
		"urn:ietf:params:oauth:grant-type:jwt-bearer", "urn:ietf:params:oauth:grant-type:token-exchange":
		return true
	}
	return false
}

// asTokenRow rewrites the row e of a token request: action oauth_token;
// Purpose gains the issuer; Reason says the grant and the outcome, from
// the action egress would have written and its reason.
func asTokenRow(e audit.Entry, leg TokenLeg) audit.Entry {
	grant := leg.GrantType
	if !knownGrant(grant) {
		grant = "other grant"
	}
	var outcome string
	switch {
	case e.Action == audit.ActionHTTPCallCancelledBeforeSend:
		outcome = "cancelled before send"
	case e.Action == audit.ActionHTTPCallCancelled:
		outcome = "cancelled in flight, abandoned"
	case e.OK:
		outcome = "ok"
	default:
		outcome = "failed"
	}
	if e.Reason != "" && e.Reason != string(ReasonCompleted) && e.Reason != string(ReasonCancelledBeforeSend) && e.Reason != string(ReasonCancelledInFlight) {
		outcome += " (" + e.Reason + ")"
	}
	e.Action = audit.ActionOAuthToken
	e.Reason = grant + ": " + outcome
	if iss := cleanIssuer(leg.Issuer); iss != "" {
		e.Purpose += " issuer " + iss
	}
	return e
}

// cleanIssuer is the issuer without userinfo, query or fragment, or "" if
// it is not a URL.
func cleanIssuer(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}
