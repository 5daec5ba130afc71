package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// resourceMetadata is a Protected Resource Metadata document (RFC 9728 §2).
type resourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
}

// serverMetadata is an authorization server's metadata (RFC 8414 §2,
// OpenID Connect Discovery 1.0 §3), the fields the Transport uses.
type serverMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	ScopesSupported                   []string `json:"scopes_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	ClientIDMetadataDocumentSupported bool     `json:"client_id_metadata_document_supported"`
	// IssParameterSupported is RFC 9207's
	// authorization_response_iss_parameter_supported.
	IssParameterSupported bool `json:"authorization_response_iss_parameter_supported"`

	// fallback is set on the endpoints the 2025-03-26 revision defaults
	// to when a server without metadata is its own authorization server.
	fallback bool
}

// maxDocument bounds a metadata or token response read into memory.
const maxDocument = 1 << 20

// getJSON GETs u and decodes a 200 JSON answer into v. found is false for
// any other status (the caller tries its next candidate). A metadata-
// supplied u passes CheckURL first.
func (t *Transport) getJSON(ctx context.Context, u string, supplied bool, v any) (found bool, err error) {
	pu, err := t.vet(ctx, u, supplied)
	if err != nil {
		return false, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, pu.String(), nil)
	if err != nil {
		return false, fmt.Errorf("oauth: metadata request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := t.leg(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxDocument))
		return false, nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxDocument)).Decode(v); err != nil {
		return false, fmt.Errorf("%w: %s: %w", ErrBadMetadata, redact(pu), err)
	}
	return true, nil
}

// discoverResource finds the Protected Resource Metadata of the server at
// server: at the challenge's resource_metadata URL, else at the
// path-aware well-known URL, else at the root one (RFC 9728 §3.1, MCP
// 2025-06-18 and later). It returns nil, nil when there is none: a
// 2025-03-26 server.
func (t *Transport) discoverResource(ctx context.Context, server *url.URL, ch challenge) (*resourceMetadata, error) {
	type candidate struct {
		url      string
		supplied bool
	}
	var cands []candidate
	if ch.ResourceMetadata != "" {
		cands = append(cands, candidate{ch.ResourceMetadata, true})
	}
	origin := server.Scheme + "://" + server.Host
	if p := strings.TrimSuffix(server.EscapedPath(), "/"); p != "" {
		cands = append(cands, candidate{origin + "/.well-known/oauth-protected-resource" + p, false})
	}
	cands = append(cands, candidate{origin + "/.well-known/oauth-protected-resource", false})
	for _, c := range cands {
		var md resourceMetadata
		found, err := t.getJSON(ctx, c.url, c.supplied, &md)
		if err != nil {
			if errors.Is(err, ErrURLRefused) || ctx.Err() != nil {
				return nil, err
			}
			t.logger().Debug("oauth: protected resource metadata unusable", "url", c.url, "err", err)
			continue
		}
		if !found {
			continue
		}
		if !resourceCovers(md.Resource, server) {
			return nil, fmt.Errorf("%w: %q names %q", ErrResourceMismatch, c.url, md.Resource)
		}
		if len(md.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("%w: %s lists no authorization server", ErrBadMetadata, c.url)
		}
		return &md, nil
	}
	return nil, nil
}

// resourceCovers reports whether the resource identifier res names the
// server at u: the same origin, and a path that is u's or a parent of it.
func resourceCovers(res string, u *url.URL) bool {
	r, err := url.Parse(res)
	if err != nil || r.Fragment != "" {
		return false
	}
	if !strings.EqualFold(r.Scheme, u.Scheme) || !strings.EqualFold(hostPort(r), hostPort(u)) {
		return false
	}
	rp := strings.TrimSuffix(r.EscapedPath(), "/")
	up := strings.TrimSuffix(u.EscapedPath(), "/")
	return rp == "" || up == rp || strings.HasPrefix(up, rp+"/")
}

// hostPort is u's host with the scheme's default port made explicit.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return u.Host + ":443"
	case "http":
		return u.Host + ":80"
	}
	return u.Host
}

// canonicalResource is the canonical URI of the MCP server at u (RFC 8707
// §2, MCP "Canonical Server URI"): lower-case scheme and host, no query,
// no fragment, no trailing slash.
func canonicalResource(u *url.URL) string {
	c := url.URL{Scheme: strings.ToLower(u.Scheme), Host: strings.ToLower(u.Host), Path: u.Path, RawPath: u.RawPath}
	return strings.TrimSuffix(c.String(), "/")
}

// discoverServer fetches the metadata of the authorization server whose
// issuer identifier is issuer, trying the URLs of RFC 8414 §3.1 and OpenID
// discovery in the order the MCP spec gives, and checks that the document
// names issuer as its issuer (RFC 8414 §3.3). supplied says that issuer came
// from a document the resource server supplied. With fallback (a
// 2025-03-26 server, which is its own authorization server), a missing
// document means the default endpoints /authorize, /token and /register.
func (t *Transport) discoverServer(ctx context.Context, issuer string, supplied, fallback bool) (*serverMetadata, error) {
	iu, err := t.vet(ctx, issuer, supplied)
	if err != nil {
		return nil, err
	}
	origin := iu.Scheme + "://" + iu.Host
	p := strings.TrimSuffix(iu.EscapedPath(), "/")
	var cands []string
	if p == "" {
		cands = []string{
			origin + "/.well-known/oauth-authorization-server",
			origin + "/.well-known/openid-configuration",
		}
	} else {
		cands = []string{
			origin + "/.well-known/oauth-authorization-server" + p,
			origin + "/.well-known/openid-configuration" + p,
			origin + p + "/.well-known/openid-configuration",
		}
	}
	for _, c := range cands {
		var md serverMetadata
		found, err := t.getJSON(ctx, c, supplied, &md)
		if err != nil {
			if errors.Is(err, ErrURLRefused) || ctx.Err() != nil {
				return nil, err
			}
			t.logger().Debug("oauth: authorization server metadata unusable", "url", c, "err", err)
			continue
		}
		if !found {
			continue
		}
		if md.Issuer != issuer {
			if !fallback {
				return nil, fmt.Errorf("%w: %s names issuer %q, not %q", ErrIssuerMismatch, c, md.Issuer, issuer)
			}
			// A 2025-03-26 server is its own authorization server and
			// its origin only the base of the metadata URL, not an
			// issuer identifier: that revision did not require them
			// to match. The document's issuer is then the issuer.
			t.logger().Debug("oauth: 2025-03-26 metadata names another issuer", "url", c, "issuer", md.Issuer)
		}
		if md.TokenEndpoint == "" {
			return nil, fmt.Errorf("%w: %s has no token_endpoint", ErrBadMetadata, c)
		}
		return &md, nil
	}
	if !fallback {
		return nil, fmt.Errorf("%w: %s", ErrNoMetadata, issuer)
	}
	return &serverMetadata{
		Issuer:                issuer,
		AuthorizationEndpoint: origin + "/authorize",
		TokenEndpoint:         origin + "/token",
		RegistrationEndpoint:  origin + "/register",
		fallback:              true,
	}, nil
}

// supportsPKCE reports whether the authorization server may be used for
// the authorization code grant: it lists S256, or it is a 2025-03-26
// server without metadata (whose PKCE support the spec presumes).
func (md *serverMetadata) supportsPKCE() bool {
	return md.fallback || slices.Contains(md.CodeChallengeMethodsSupported, "S256")
}

// redact is u without its query and user info, for messages.
func redact(u *url.URL) string {
	c := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}
	return c.String()
}
