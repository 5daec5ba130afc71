package vault

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// OAuth records are the one kind of secret whose value leaves the vault
// other than through [Vault.Apply]: an OAuth client places an access token
// on its requests itself, and sends a refresh token or a client secret in
// the body of a token request, which no placement describes. They are
// sealed like every secret (AES-256-GCM, re-sealed by [Rotate]), kept as
// internal records of the secrets table — named
// "andon:oauth:token:<resource>:<issuer>" and "andon:oauth:client:<issuer>"
// with each part a SHA-256 prefix in hex, so that [Vault.List] and the
// secret commands never see them — and bound to the hosts they were issued
// for: [Vault.OAuthGet] opens one only for a request to one of them.

// OAuthKind says what an OAuth record holds.
type OAuthKind string

// The kinds of OAuth record.
const (
	// OAuthToken is a token (access and refresh) for one resource from
	// one issuer; its hosts are the resource's.
	OAuthToken OAuthKind = "token"
	// OAuthClient is a client registration with one issuer (from dynamic
	// registration, or its client secret); its hosts are the issuer's.
	OAuthClient OAuthKind = "client"
)

// OAuthRef names an OAuth record.
type OAuthRef struct {
	// Kind is what the record holds.
	Kind OAuthKind
	// Issuer is the authorization server's issuer identifier.
	Issuer string
	// Resource is the protected resource (the MCP endpoint) a token is
	// for. Empty for an [OAuthClient].
	Resource string
}

// OAuthInfo describes an OAuth record without its value.
type OAuthInfo struct {
	OAuthRef
	// Hosts are the hosts the record may be used for.
	Hosts []string
	// UpdatedAt is when it was last written.
	UpdatedAt time.Time
}

const oauthPrefix = internalPrefix + "oauth:"

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:12])
}

func (r OAuthRef) name() (string, error) {
	if r.Issuer == "" {
		return "", fmt.Errorf("%w: an OAuth record needs its issuer", ErrInvalid)
	}
	switch r.Kind {
	case OAuthToken:
		if r.Resource == "" {
			return "", fmt.Errorf("%w: an OAuth token needs its resource", ErrInvalid)
		}
		return oauthPrefix + "token:" + digest(r.Resource) + ":" + digest(r.Issuer), nil
	case OAuthClient:
		if r.Resource != "" {
			return "", fmt.Errorf("%w: an OAuth client registration belongs to an issuer, not a resource", ErrInvalid)
		}
		return oauthPrefix + "client:" + digest(r.Issuer), nil
	default:
		return "", fmt.Errorf("%w: OAuth record kind %q", ErrInvalid, r.Kind)
	}
}

// oauthValue is what an OAuth record seals: its reference (so that a
// listing can say what it is) and the caller's value.
type oauthValue struct {
	Kind     OAuthKind       `json:"kind"`
	Issuer   string          `json:"issuer"`
	Resource string          `json:"resource,omitempty"`
	Value    json.RawMessage `json:"value"`
}

// OAuthHosts returns the host of each URL, normalised: the hosts an OAuth
// record for those URLs is bound to.
func OAuthHosts(urls ...string) ([]string, error) {
	var hosts []string
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.Hostname() == "" {
			return nil, fmt.Errorf("%w: an OAuth record's URL has no host", ErrInvalid)
		}
		hosts = append(hosts, NormalizeHost(u.Hostname()))
	}
	return hosts, nil
}

// OAuthSet seals value, which must be JSON, as the record ref, bound to
// hosts, replacing any record of that name. The write is one statement of
// the backend: a reader sees the old record or the new one, never a part.
func (v *Vault) OAuthSet(ctx context.Context, ref OAuthRef, value []byte, hosts []string) error {
	name, err := ref.name()
	if err != nil {
		return err
	}
	if !json.Valid(value) {
		return fmt.Errorf("%w: an OAuth record's value must be JSON", ErrInvalid)
	}
	hosts, err = normalizeHosts(hosts)
	if err != nil {
		return fmt.Errorf("OAuth %s: %w", ref.Kind, err)
	}
	plain, err := json.Marshal(oauthValue{Kind: ref.Kind, Issuer: ref.Issuer, Resource: ref.Resource, Value: value})
	if err != nil {
		return fmt.Errorf("vault: OAuth %s: %w", ref.Kind, err)
	}
	defer clear(plain)
	rec, err := seal(v.key, name, string(Bearer), hosts, plain)
	if err != nil {
		return err
	}
	rec.UpdatedAt = v.now().UTC()
	if err := v.backend.SecretPut(ctx, rec, true); err != nil {
		return fmt.Errorf("vault: storing an OAuth %s: %w", ref.Kind, err)
	}
	return nil
}

// OAuthGet opens the record ref for a request to host and returns its
// value. The error matches [ErrNotFound] when there is none, and
// [ErrHostNotAllowed] when host is not one of the record's hosts, in which
// case nothing was decrypted.
func (v *Vault) OAuthGet(ctx context.Context, ref OAuthRef, host string) ([]byte, error) {
	name, err := ref.name()
	if err != nil {
		return nil, err
	}
	rec, err := v.backend.SecretGet(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("OAuth %s: %w", ref.Kind, err)
	}
	host = NormalizeHost(host)
	if !hostIn(host, rec.Hosts) {
		return nil, fmt.Errorf("OAuth %s, host %q: %w", ref.Kind, host, ErrHostNotAllowed)
	}
	plain, err := open(v.key, rec)
	if err != nil {
		return nil, err
	}
	defer clear(plain)
	var ov oauthValue
	if err := json.Unmarshal(plain, &ov); err != nil || ov.Kind != ref.Kind || ov.Issuer != ref.Issuer || ov.Resource != ref.Resource {
		return nil, fmt.Errorf("OAuth %s: %w", ref.Kind, ErrCorrupt)
	}
	return slices.Clone(ov.Value), nil
}

// OAuthDelete removes the record ref. The error matches [ErrNotFound] when
// there is none.
func (v *Vault) OAuthDelete(ctx context.Context, ref OAuthRef) error {
	name, err := ref.name()
	if err != nil {
		return err
	}
	if err := v.backend.SecretDelete(ctx, name); err != nil {
		return fmt.Errorf("removing an OAuth %s: %w", ref.Kind, err)
	}
	return nil
}

// OAuthList describes every OAuth record of kind, for resource when it is
// not empty (tokens only), ordered by name. It opens each record to learn
// what it is, and returns no value.
func (v *Vault) OAuthList(ctx context.Context, kind OAuthKind, resource string) ([]OAuthInfo, error) {
	prefix := oauthPrefix + string(kind) + ":"
	if resource != "" {
		prefix += digest(resource) + ":"
	}
	recs, err := v.backend.SecretList(ctx)
	if err != nil {
		return nil, fmt.Errorf("vault: listing OAuth records: %w", err)
	}
	var out []OAuthInfo
	for _, rec := range recs {
		if !strings.HasPrefix(rec.Name, prefix) {
			continue
		}
		plain, err := open(v.key, rec)
		if err != nil {
			return nil, err
		}
		var ov oauthValue
		err = json.Unmarshal(plain, &ov)
		clear(plain)
		if err != nil {
			return nil, fmt.Errorf("OAuth record: %w", ErrCorrupt)
		}
		out = append(out, OAuthInfo{
			OAuthRef:  OAuthRef{Kind: ov.Kind, Issuer: ov.Issuer, Resource: ov.Resource},
			Hosts:     slices.Clone(rec.Hosts),
			UpdatedAt: rec.UpdatedAt,
		})
	}
	return out, nil
}
