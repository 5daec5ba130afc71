package oauth

import (
	"errors"
	"fmt"
)

// AuthorizationRequiredError reports that a resource needs a user's
// authorization the Transport cannot ask for: its Authorize hook is nil.
// Run [Transport.Login] (for example `andon auth login`) and try again.
type AuthorizationRequiredError struct {
	Resource string // the protected resource
	Issuer   string // the authorization server
	Scopes   []string
}

// Error names the resource and the authorization server, and says to log
// in first.
func (e *AuthorizationRequiredError) Error() string {
	return fmt.Sprintf("oauth: %s needs a user's authorization at %s (no Authorize hook; log in first)", e.Resource, e.Issuer)
}

// TokenError is an error response of a token or registration endpoint
// (RFC 6749 §5.2). It carries the error code and description the server
// sent, never the request's secrets.
type TokenError struct {
	Endpoint    string // "token" or "registration"
	StatusCode  int
	Code        string // e.g. invalid_grant, invalid_client
	Description string
}

// Error names the endpoint and the HTTP status, then the server's error
// code and description where it sent them.
func (e *TokenError) Error() string {
	s := fmt.Sprintf("oauth: %s endpoint answered HTTP %d", e.Endpoint, e.StatusCode)
	if e.Code != "" {
		s += ": " + e.Code
	}
	if e.Description != "" {
		s += fmt.Sprintf(" (%s)", e.Description)
	}
	return s
}

// AuthorizationError is an error the authorization endpoint returned to the
// redirect URI (RFC 6749 §4.1.2.1), such as access_denied.
type AuthorizationError struct {
	Code        string
	Description string
}

// Error returns the authorization server's error code and description.
func (e *AuthorizationError) Error() string {
	if e.Description != "" {
		return fmt.Sprintf("oauth: authorization failed: %s (%s)", e.Code, e.Description)
	}
	return "oauth: authorization failed: " + e.Code
}

// Errors the discovery and authorization steps return, checkable with
// errors.Is.
var (
	// ErrNoMetadata: neither the resource nor its authorization server
	// published usable metadata.
	ErrNoMetadata = errors.New("oauth: no authorization server metadata")
	// ErrResourceMismatch: the Protected Resource Metadata names a
	// resource other than the server that was asked (RFC 9728 §3.3).
	ErrResourceMismatch = errors.New("oauth: protected resource metadata is for another resource")
	// ErrIssuerMismatch: the authorization server metadata names an
	// issuer other than the one its URL was built from (RFC 8414 §3.3).
	ErrIssuerMismatch = errors.New("oauth: authorization server metadata issuer mismatch")
	// ErrNoPKCE: the authorization server does not advertise PKCE S256.
	ErrNoPKCE = errors.New("oauth: authorization server does not support PKCE S256")
	// ErrCallbackIssuer: the authorization response's iss is missing
	// where the server promised it, or is not the server's issuer
	// (RFC 9207): a mix-up attack, or a misconfigured server.
	ErrCallbackIssuer = errors.New("oauth: authorization response iss does not match the authorization server")
	// ErrState: the authorization response's state is not the request's.
	ErrState = errors.New("oauth: authorization response state mismatch")
	// ErrNoRegistrationMethod: no pre-registered client, no Client ID
	// Metadata Document support, and no registration endpoint.
	ErrNoRegistrationMethod = errors.New("oauth: no way to register a client with the authorization server")
	// ErrStepUpLimit: the server kept answering insufficient_scope after
	// the Transport re-authorized MaxStepUps times for one request.
	ErrStepUpLimit = errors.New("oauth: scope step-up limit reached")
	// ErrUnauthorized: the server rejected a token the Transport had just
	// obtained for it.
	ErrUnauthorized = errors.New("oauth: the server rejected a fresh token")
	// ErrURLRefused: Transport.CheckURL refused a metadata-supplied URL.
	ErrURLRefused = errors.New("oauth: URL refused")
	// ErrBadMetadata: a metadata or registration document is malformed.
	ErrBadMetadata = errors.New("oauth: malformed metadata")
)
