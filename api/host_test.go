package api_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/metrics"
)

// requestHost makes an unauthenticated GET of path with the Host header
// host.
func (f *fixture) requestHost(path, host string) (int, http.Header, []byte) {
	f.t.Helper()
	req, err := http.NewRequest("GET", f.url+path, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	req.Host = host
	resp, err := f.http.Do(req)
	if err != nil {
		f.t.Fatalf("GET %s (Host %s): %v", path, host, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, data
}

// DNS rebinding: a request by a name that is not loopback's, nor one
// allowed (Config.AllowedHosts, andon serve --allowed-host), is refused
// with 421 before any route runs — health, the OpenAPI document and the
// console included — with a message naming the flag; it is counted and
// audited as a refusal. Loopback names are served, with or without a
// port, as is an allowed name in any case.
func TestHostAllowList(t *testing.T) {
	t.Parallel()
	m := metrics.New(nil)
	f := newFixture(t, options{tokens: true, configure: func(c *api.Config) {
		c.AllowedHosts = []string{"andon.example.internal", "[fd00::7]"}
		c.Metrics = m
	}})
	u, err := url.Parse(f.url)
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	paths := []string{"/v1/health", "/v1/openapi.json", "/", "/v1/runs"}
	for _, host := range []string{"evil.example", "evil.example:" + port, "127.0.0.1.evil.example", "localhost.evil.example:" + port, "andon.example", "fd00::8"} {
		for _, path := range paths {
			status, header, body := f.requestHost(path, host)
			msg := checkError(t, status, header, body, http.StatusMisdirectedRequest, "misdirected")
			if !strings.Contains(msg, "--allowed-host") || strings.Contains(msg, host) {
				t.Errorf("Host %s, %s: message %q, want the flag named and the host not echoed", host, path, msg)
			}
		}
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST", "[::1]:" + port, "127.1.2.3", "andon.example.internal",
		"ANDON.example.internal:8443", "[fd00::7]:443"} {
		for _, path := range paths[:3] {
			if status, _, body := f.requestHost(path, host); status != http.StatusOK {
				t.Errorf("Host %s, GET %s: %d %s, want it served", host, path, status, body)
			}
		}
	}
	// 24 refusals: one cause, so one row now (the rest are counted for
	// its summary), and every one counted.
	rows, err := f.audit.List(context.Background(), audit.Query{Action: audit.ActionAPIDenied})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Entry.Status != http.StatusMisdirectedRequest || rows[0].Entry.Reason != "host not allowed" {
		t.Errorf("api_denied rows %+v, want one for the host", rows)
	}
	if got := deniedMetric(t, m); got != 24 {
		t.Errorf("andon_api_denied_total counted %v refusals, want 24", got)
	}
}

// An allowed host is a name or an address, without a port.
func TestAllowedHostsAreNames(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true})
	for _, bad := range []string{"andon.example:8443", "", "http://andon.example", "a b"} {
		if _, err := api.NewHandler(api.Config{Runtime: f.rt, Store: f.store, AllowedHosts: []string{bad}}); err == nil {
			t.Errorf("AllowedHosts %q taken", bad)
		}
	}
	for _, good := range []string{"andon.example", "10.0.0.1", "::1", "[fd00::1]"} {
		if err := api.CheckHostName(good); err != nil {
			t.Errorf("CheckHostName(%q) = %v", good, err)
		}
	}
}
