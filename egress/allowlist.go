package egress

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/andonhq/andon/vault"
)

// allowlist is Config.AllowedHosts, parsed.
type allowlist struct {
	any      bool           // "*": any host; addresses still vetted
	exact    []string       // host names, normalised
	suffixes []string       // from "*.example.com": ".example.com"
	prefixes []netip.Prefix // IP literals and CIDRs: the only bypass of address vetting
}

func parseAllowlist(entries []string) (allowlist, error) {
	var a allowlist
	for _, raw := range entries {
		e := vault.NormalizeHost(raw)
		switch {
		case e == "*":
			a.any = true
		case strings.HasPrefix(e, "*."):
			if strings.ContainsAny(e[2:], "*/:") || e[2:] == "" {
				return allowlist{}, fmt.Errorf("egress: allowlist entry %q: a wildcard is \"*.domain\"", raw)
			}
			a.suffixes = append(a.suffixes, e[1:])
		case strings.Contains(e, "/"):
			p, err := netip.ParsePrefix(e)
			if err != nil {
				return allowlist{}, fmt.Errorf("egress: allowlist entry %q: %w", raw, err)
			}
			a.prefixes = append(a.prefixes, p.Masked())
		default:
			if addr, err := netip.ParseAddr(e); err == nil {
				if addr.Zone() != "" {
					return allowlist{}, fmt.Errorf("egress: allowlist entry %q: zones are not allowed", raw)
				}
				a.prefixes = append(a.prefixes, netip.PrefixFrom(addr, addr.BitLen()))
				continue
			}
			if e == "" || strings.ContainsAny(e, "*/:@ ") {
				return allowlist{}, fmt.Errorf("egress: allowlist entry %q is not a host, *.domain, IP address or CIDR", raw)
			}
			a.exact = append(a.exact, e)
		}
	}
	return a, nil
}

// literal reports whether host is named literally: an exact name entry, or
// an IP literal inside an address entry. Only such hosts may be called over
// plain http.
func (a allowlist) literal(host string) bool {
	if slices.Contains(a.exact, host) {
		return true
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		return a.bypass(addr)
	}
	return false
}

// matches reports whether host may be called at all.
func (a allowlist) matches(host string) bool {
	if a.any || a.literal(host) {
		return true
	}
	for _, s := range a.suffixes {
		if strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}

// bypass reports whether addr is exempt from address vetting: it lies in an
// IP or CIDR entry.
func (a allowlist) bypass(addr netip.Addr) bool {
	for _, p := range a.prefixes {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}
