package api

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/andonhq/andon/audit"
)

// hosts is the API's Host allow-list: the names a request may reach it by.
// A web page on another site can make a browser send requests to loopback
// under a name of its own that resolves there (DNS rebinding); the browser
// then sends that name in Host, and refusing it keeps the page from
// reading even what needs no token (health, the OpenAPI document, the
// console's files). Loopback names are always allowed: localhost, any
// 127.0.0.0/8 literal and ::1; the port is not looked at (the listener
// chose it).
type hosts map[string]bool

// newHosts is the allow-list with names added to the loopback ones.
func newHosts(names []string) (hosts, error) {
	h := hosts{}
	for _, n := range names {
		if err := CheckHostName(n); err != nil {
			return nil, fmt.Errorf("api: Config.AllowedHosts: %w", err)
		}
		h[canonicalHost(n)] = true
	}
	return h, nil
}

// CheckHostName reports whether name may be on the Host allow-list (see
// [Config].AllowedHosts): a host name or an IP address, without a port.
func CheckHostName(name string) error {
	n := canonicalHost(name)
	if n == "" || strings.ContainsAny(n, ":/ @") && !isIP(n) {
		return fmt.Errorf("%q is not a host name or an IP address: give one without a port", name)
	}
	return nil
}

// allows reports whether a request whose Host header is hostport may be
// served.
func (h hosts) allows(hostport string) bool {
	host := hostport
	if name, _, err := net.SplitHostPort(hostport); err == nil {
		host = name
	}
	host = canonicalHost(host)
	if host == "localhost" {
		return true
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.Unmap().IsLoopback() {
		return true
	}
	return h[host]
}

// canonicalHost is a host name as it is compared: lower case, without the
// brackets of an IPv6 literal or a final dot.
func canonicalHost(name string) string {
	name = strings.ToLower(strings.TrimSpace(name))
	name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
	return strings.TrimSuffix(name, ".")
}

func isIP(name string) bool {
	_, err := netip.ParseAddr(name)
	return err == nil
}

// reasonHost is the reason of a refusal for the Host: a fixed literal.
const reasonHost = "host not allowed"

// misdirected refuses a request whose Host is not allowed: 421, counted in
// andon_api_denied_total and audited as api_denied, coalesced as every
// refusal is (one cause, whatever the Host: a name the client chooses
// buys it no rows). The Host is neither echoed nor recorded.
func (s *server) misdirected(w http.ResponseWriter, r *http.Request) {
	s.cfg.Metrics.Denied(http.StatusMisdirectedRequest, reasonHost)
	s.denials.record(r.Context(), denialCause{status: http.StatusMisdirectedRequest, reason: reasonHost},
		audit.Entry{Action: audit.ActionAPIDenied, Purpose: "api (token not read)", Method: r.Method,
			Path: capPath(r.URL.EscapedPath()), Status: http.StatusMisdirectedRequest, Reason: reasonHost})
	writeError(w, http.StatusMisdirectedRequest, "misdirected",
		"this server does not answer to the name in the Host header; serve it under that name with andon serve --allowed-host NAME (api.Config.AllowedHosts)")
}
