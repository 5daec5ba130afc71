package oauth

import "slices"

// offlineAccess is the scope that asks for a refresh token (OpenID Connect
// Core §11, MCP SEP-2207).
const offlineAccess = "offline_access"

// selectScopes picks the scopes to request (MCP "Scope Selection
// Strategy"): the configured scopes, else the challenge's scope, else the
// resource's scopes_supported, else none. A step-up requests the union of
// the scopes requested before and the challenged ones (SEP-2350). With the
// authorization code grant, offline_access is added when the authorization
// server lists it (SEP-2207).
func (t *Transport) selectScopes(ch challenge, prm *resourceMetadata, as *serverMetadata, prev []string, stepUp bool) []string {
	var s []string
	switch {
	case len(t.Client.Scopes) > 0:
		s = slices.Clone(t.Client.Scopes)
	case len(ch.Scopes) > 0:
		s = slices.Clone(ch.Scopes)
	case prm != nil && len(prm.ScopesSupported) > 0:
		s = slices.Clone(prm.ScopesSupported)
	}
	if stepUp {
		s = union(prev, union(s, ch.Scopes))
	}
	if t.Grant == GrantAuthorizationCode && !t.Client.NoOfflineAccess && slices.Contains(as.ScopesSupported, offlineAccess) {
		s = union(s, []string{offlineAccess})
	}
	return s
}

// union is a followed by the elements of b not in a.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
