package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/andonhq/andon/mcp"
)

// target is how a command reaches its MCP server: over stdio (--stdio) or
// over HTTP (--url), worked out from the flags before anything starts.
type target struct {
	transport mcp.Transport
	// name is the server as messages show it: the program, or the URL
	// without its userinfo, query and fragment, which may hold secrets.
	name string
	// local is true for a subprocess, whose stderr -v shows.
	local bool
}

// stdioTarget is the server that --stdio runs.
func stdioTarget(commandLine string) (target, error) {
	argv, err := splitCommandLine(commandLine)
	if err != nil {
		return target{}, err
	}
	if len(argv) == 0 {
		return target{}, errors.New("empty command")
	}
	return target{transport: mcp.Command(argv[0], argv[1:]...), name: argv[0], local: true}, nil
}

// httpTarget is the server at the --url endpoint, sent header with every
// request. Its errors never quote the URL.
func httpTarget(rawURL string, header http.Header) (target, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// The parser's message quotes the URL, and with it any secret.
		return target{}, errors.New("not a valid URL (not shown: it may hold a secret)")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return target{}, fmt.Errorf("scheme %q is not http or https", u.Scheme)
	}
	if u.Opaque != "" || u.Hostname() == "" {
		return target{}, errors.New("the URL has no host")
	}
	t := mcp.HTTP(rawURL, newHTTPClient())
	t.Header = header
	return target{transport: t, name: redactURL(u)}, nil
}

// newHTTPClient returns the client every --url request goes through. It is
// the one place it is built, so that routing MCP traffic through guarded
// egress is a change of one line. No Timeout: it would cut response
// streams; --timeout bounds each request instead.
func newHTTPClient() *http.Client {
	return &http.Client{}
}

// redactURL is u as messages may show it: scheme, host and path, without
// userinfo, query or fragment.
func redactURL(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}).String()
}
