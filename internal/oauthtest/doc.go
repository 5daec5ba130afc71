// Package oauthtest gives andon's tests a real OAuth authorization server
// and an MCP resource server that checks its tokens, both on 127.0.0.1.
//
// The authorization server ([AS], [StartAS]) is oidc-provider, a certified
// OpenID provider, run by node from an embedded script: authorization code
// with PKCE (required), refresh tokens, open dynamic client registration
// (RFC 7591), client credentials, resource indicators (RFC 8707: the
// access token is a JWT whose audience is the MCP resource) and scopes per
// resource. Its user is always logged in and always consents, so [Approve]
// (or a headless browser) drives the authorization page without a person.
// It can hold token requests ([AS.StallToken]), so a test can cancel one in
// flight and see the server notice.
//
// The resource server ([ResourceServer]) is an mcptest server behind a
// check of those tokens: 401 with a WWW-Authenticate challenge naming its
// protected resource metadata (RFC 9728), 403 insufficient_scope for a
// tool that needs a scope the token lacks (step-up).
//
// Both keep a log of what they saw ([AS.Events], [ResourceServer.Log]),
// which never holds a token, a code or a secret, so that tests assert
// behaviour from the servers' side. [Start] starts the pair.
//
// Without node the tests that use it skip (and fail under CI): see
// package nodepeer.
package oauthtest
