package oauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// vet parses raw and, if it came from metadata a server supplied, passes it
// to CheckURL (or, without one, allows https, and http on loopback only).
func (t *Transport) vet(ctx context.Context, raw string, supplied bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("%w: %q is not an http(s) URL", ErrBadMetadata, raw)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%w: %s carries user info", ErrURLRefused, redact(u))
	}
	if !supplied {
		return u, nil
	}
	check := t.CheckURL
	if check == nil {
		check = defaultCheckURL
	}
	if err := check(ctx, u); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrURLRefused, redact(u), err)
	}
	return u, nil
}

// defaultCheckURL allows https URLs, and http URLs to loopback hosts only
// (a local development server).
func defaultCheckURL(_ context.Context, u *url.URL) error {
	if u.Scheme == "https" {
		return nil
	}
	if isLoopback(u.Hostname()) {
		return nil
	}
	return errors.New("plain http to a host that is not loopback")
}

// isLoopback reports whether host is localhost or a loopback address.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
