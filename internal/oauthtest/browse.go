package oauthtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
)

// Approve drives the authorization page at authURL as the always-consenting
// test user would in a browser: it follows the server's redirects, keeping
// its cookies, until one leads to the request's redirect_uri, and returns
// that redirect's query (code, state, iss; or error) without following it.
// It is an oauth.Transport Authorize hook for a client that listens on no
// redirect URI of its own.
func Approve(ctx context.Context, authURL string) (url.Values, error) {
	final, err := browse(ctx, authURL, true)
	if err != nil {
		return nil, err
	}
	return final.Query(), nil
}

// Browse does what [Approve] does and then follows the last redirect too,
// to the client's redirect URI (a loopback listener), as a browser would.
func Browse(ctx context.Context, authURL string) error {
	_, err := browse(ctx, authURL, false)
	return err
}

func browse(ctx context.Context, authURL string, stop bool) (*url.URL, error) {
	u, err := url.Parse(authURL)
	if err != nil {
		return nil, errors.New("oauthtest: the authorization URL does not parse")
	}
	redirect := u.Query().Get("redirect_uri")
	if redirect == "" {
		return nil, errors.New("oauthtest: the authorization URL has no redirect_uri")
	}
	jar, _ := cookiejar.New(nil)
	var final *url.URL
	client := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) > 20 {
			return errors.New("oauthtest: too many redirects")
		}
		if strings.HasPrefix(req.URL.String(), redirect) {
			final = req.URL
			if stop {
				return http.ErrUseLastResponse
			}
		}
		return nil
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("oauthtest: browsing the authorization flow: %w", err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if final == nil {
		return nil, fmt.Errorf("oauthtest: the flow ended at %s with status %d, not at the redirect URI: %.300s", resp.Request.URL.Path, resp.StatusCode, body)
	}
	return final, nil
}
