package oauth

import (
	"context"
	"crypto"
)

// AuthMethod is a token endpoint client authentication method (RFC 7591
// token_endpoint_auth_method).
type AuthMethod string

// The token endpoint authentication methods the Transport speaks.
const (
	// AuthNone: a public client; the client_id goes in the form.
	AuthNone AuthMethod = "none"
	// AuthClientSecretBasic: client_id and secret in an HTTP Basic header.
	AuthClientSecretBasic AuthMethod = "client_secret_basic"
	// AuthClientSecretPost: client_id and secret in the form.
	AuthClientSecretPost AuthMethod = "client_secret_post"
	// AuthPrivateKeyJWT: a JWT signed with ClientConfig.PrivateKey
	// (RFC 7523 client assertion).
	AuthPrivateKeyJWT AuthMethod = "private_key_jwt"
)

// Grant is how the Transport obtains a token.
type Grant int

const (
	// GrantAuthorizationCode is the authorization code grant with PKCE:
	// a user authorizes in a browser, through Transport.Authorize.
	GrantAuthorizationCode Grant = iota
	// GrantClientCredentials is the client credentials grant, for
	// machine-to-machine servers: the client authenticates with its
	// secret (basic or post) or, with ClientConfig.PrivateKey, a signed
	// JWT assertion (private_key_jwt). No user takes part.
	GrantClientCredentials
	// GrantJWTBearer is the JWT bearer grant (RFC 7523 §2.1): an assertion
	// from ClientConfig.Assertion is exchanged for a token. The assertion
	// is a workload identity token (SEP-1933: a cloud's or Kubernetes'
	// signed identity), or an Identity Assertion JWT Authorization Grant
	// from an enterprise IdP ([IDJAG], SEP-990). No user takes part.
	GrantJWTBearer
)

// ClientConfig describes the OAuth client. Every field is optional for the
// authorization code grant with Dynamic Client Registration.
type ClientConfig struct {
	// ClientID and ClientSecret are a pre-registered client. With a
	// ClientID set, the Transport never registers.
	ClientID     string
	ClientSecret string
	// AuthMethod is the token endpoint authentication method of the
	// pre-registered client. Empty means: choose from what the
	// authorization server supports (basic, then post, with a secret;
	// private_key_jwt with a PrivateKey; none otherwise).
	AuthMethod AuthMethod
	// PrivateKey signs the private_key_jwt client assertion: an
	// *ecdsa.PrivateKey (ES256, ES384, ES512) or an *rsa.PrivateKey
	// (RS256). KeyID, if set, goes in the JWT header as kid.
	PrivateKey crypto.Signer
	KeyID      string
	// ClientIDMetadataURL is the HTTPS URL of this client's Client ID
	// Metadata Document. When an authorization server advertises
	// client_id_metadata_document_supported, the URL is the client_id and
	// no registration takes place.
	ClientIDMetadataURL string
	// ClientName is the client_name sent with Dynamic Client
	// Registration. Empty means "andon mcp client".
	ClientName string
	// RedirectURL is the redirect URI of the authorization code grant,
	// for example a loopback URL from [NewLoopbackRedirect].
	RedirectURL string
	// Scopes, if set, are requested instead of the scopes the server's
	// challenge or metadata names. A step-up adds the challenged scopes.
	Scopes []string
	// Assertion returns the assertion of GrantJWTBearer for the
	// authorization server issuer and the resource. It is called for every
	// token request; nothing caches it.
	Assertion func(ctx context.Context, issuer, resource string) (string, error)
	// NoOfflineAccess stops the Transport adding the offline_access scope,
	// which it otherwise requests when the authorization server lists it
	// in scopes_supported, so that it gets a refresh token.
	NoOfflineAccess bool
}
