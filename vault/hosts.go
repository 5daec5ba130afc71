package vault

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
)

// NormalizeHost returns the form in which hosts are stored and compared:
// lower case, without a trailing dot, IPv6 literals without brackets. It
// does not strip a port; hosts never carry one.
func NormalizeHost(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	h = strings.TrimSuffix(h, ".")
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	return h
}

var hostNameRE = regexp.MustCompile(`^[a-z0-9_]([a-z0-9_-]{0,62})(\.[a-z0-9_]([a-z0-9_-]{0,62}))*$`)

// normalizeHosts validates, normalises, sorts and de-duplicates hosts.
func normalizeHosts(hosts []string) ([]string, error) {
	if len(hosts) == 0 {
		return nil, fmt.Errorf("%w: a secret needs at least one host it may be sent to", ErrInvalid)
	}
	out := make([]string, 0, len(hosts))
	for _, raw := range hosts {
		h := NormalizeHost(raw)
		if _, err := netip.ParseAddr(h); err != nil && !hostNameRE.MatchString(h) {
			return nil, fmt.Errorf("%w: %q is not a host name or IP address (no scheme, port, path or wildcard)", ErrInvalid, raw)
		}
		out = append(out, h)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// checkName refuses names outside [A-Za-z0-9._-], which also keeps the
// vault's internal records (named "andon:…") out of reach.
func checkName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%w: name %q must be 1-128 of A-Z a-z 0-9 . _ - and start with a letter or digit", ErrInvalid, name)
	}
	return nil
}
