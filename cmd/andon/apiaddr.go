package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// envAPI names the environment variable holding the API's address, for the
// commands that use the API when --api is not given: set it once for a serve
// on another port (andon serve --addr 127.0.0.1:7711) instead of repeating
// --api on every command.
const envAPI = "ANDON_API"

// apiBaseURL turns an --api value into the API's base URL. It takes what
// serve prints (http://127.0.0.1:7711, a trailing slash allowed; a URL
// without a port has its scheme's) or a bare host:port, as serve's --addr
// takes it.
func apiBaseURL(addr string) (string, error) {
	raw, bare := addr, !strings.Contains(addr, "://")
	if bare {
		raw = "http://" + addr
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", errors.New("not host:port nor a valid URL (not shown)")
	}
	if u.User != nil {
		// A token goes in --token or ANDON_TOKEN, never in an address
		// that messages repeat.
		return "", fmt.Errorf("the address has userinfo (not shown); give the token with --token or %s", envToken)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("%q: scheme %q is not http or https", addr, u.Scheme)
	}
	// A URL may leave its port to its scheme (a TLS proxy on 443); a bare
	// address must say it, as serve's --addr does.
	if _, _, err := net.SplitHostPort(u.Host); bare && err != nil || u.Hostname() == "" {
		return "", fmt.Errorf("%q: want host:port, or a URL such as http://%s, as andon serve prints it", addr, defaultAPI)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%q: want the API's base URL, without a query or fragment", addr)
	}
	return u.Scheme + "://" + u.Host + strings.TrimRight(u.EscapedPath(), "/"), nil
}
