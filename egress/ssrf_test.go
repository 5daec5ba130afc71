package egress_test

import (
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/egress"
	"github.com/andonhq/andon/vault"
)

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

// ssrfCases are hostile destinations. Each must be refused for the reason
// given, before any secret is read and before anything is dialled.
var ssrfCases = []struct {
	url        string
	hostHeader string
	want       egress.Reason
}{
	// IPv4 ranges, as canonical literals.
	{url: "https://127.0.0.1/", want: egress.ReasonAddress},
	{url: "https://127.255.255.254/", want: egress.ReasonAddress},
	{url: "https://10.0.0.1/", want: egress.ReasonAddress},
	{url: "https://172.16.0.1/", want: egress.ReasonAddress},
	{url: "https://172.31.255.255/", want: egress.ReasonAddress},
	{url: "https://192.168.1.1/", want: egress.ReasonAddress},
	{url: "https://169.254.169.254/latest/meta-data/", want: egress.ReasonAddress},
	{url: "https://100.64.0.1/", want: egress.ReasonAddress},
	{url: "https://0.0.0.0/", want: egress.ReasonAddress},
	{url: "https://224.0.0.1/", want: egress.ReasonAddress},
	{url: "https://255.255.255.255/", want: egress.ReasonAddress},
	{url: "https://240.0.0.1/", want: egress.ReasonAddress},
	{url: "https://192.0.0.8/", want: egress.ReasonAddress},
	{url: "https://192.0.2.1/", want: egress.ReasonAddress},
	{url: "https://198.51.100.7/", want: egress.ReasonAddress},
	{url: "https://203.0.113.9/", want: egress.ReasonAddress},
	{url: "https://198.18.0.1/", want: egress.ReasonAddress},
	// Decimal, octal and hex spellings of addresses.
	{url: "https://0/", want: egress.ReasonNumericHost},
	{url: "https://2130706433/", want: egress.ReasonNumericHost},
	{url: "https://0x7f000001/", want: egress.ReasonNumericHost},
	{url: "https://017700000001/", want: egress.ReasonNumericHost},
	{url: "https://0177.0.0.1/", want: egress.ReasonNumericHost},
	{url: "https://0x7f.0.0.1/", want: egress.ReasonNumericHost},
	{url: "https://127.1/", want: egress.ReasonNumericHost},
	{url: "https://0xa9.0xfe.0xa9.0xfe/", want: egress.ReasonNumericHost},
	{url: "https://2852039166/", want: egress.ReasonNumericHost}, // 169.254.169.254
	// IPv6 ranges.
	{url: "https://[::]/", want: egress.ReasonAddress},
	{url: "https://[::1]/", want: egress.ReasonAddress},
	{url: "https://[::ffff:127.0.0.1]/", want: egress.ReasonAddress},
	{url: "https://[::ffff:169.254.169.254]/", want: egress.ReasonAddress},
	{url: "https://[::ffff:8.8.8.8]/", want: egress.ReasonAddress}, // mapped: refused whatever it embeds
	{url: "https://[::127.0.0.1]/", want: egress.ReasonAddress},
	{url: "https://[::ffff:0:7f00:1]/", want: egress.ReasonAddress},    // IPv4-translated 127.0.0.1
	{url: "https://[::ffff:0:a9fe:a9fe]/", want: egress.ReasonAddress}, // IPv4-translated 169.254.169.254
	{url: "https://[64:ff9b::a9fe:a9fe]/", want: egress.ReasonAddress},
	{url: "https://[64:ff9b:1::a00:1]/", want: egress.ReasonAddress},
	{url: "https://[fc00::1]/", want: egress.ReasonAddress},
	{url: "https://[fd00:ec2::254]/", want: egress.ReasonAddress},
	{url: "https://[fe80::1]/", want: egress.ReasonAddress},
	{url: "https://[fe80::1%25eth0]/", want: egress.ReasonZone},
	{url: "https://[::1%25lo]/", want: egress.ReasonZone},
	{url: "https://[ff02::1]/", want: egress.ReasonAddress},
	{url: "https://[2001:db8::1]/", want: egress.ReasonAddress},
	{url: "https://[100::1]/", want: egress.ReasonAddress},
	{url: "https://[2002:7f00:1::]/", want: egress.ReasonAddress},               // 6to4 embedding 127.0.0.1
	{url: "https://[2002:a9fe:a9fe::1]/", want: egress.ReasonAddress},           // 6to4 embedding 169.254.169.254
	{url: "https://[2001:0:a00:1::1]/", want: egress.ReasonAddress},             // Teredo server 10.0.0.1
	{url: "https://[2001:0:4136:e378::3fff:fdd2]/", want: egress.ReasonAddress}, // Teredo client 192.0.2.45
	// Names whose DNS answers are hostile.
	{url: "https://localhost/", want: egress.ReasonAddress},
	{url: "https://localhost./", want: egress.ReasonAddress},
	{url: "https://LOCALHOST./", want: egress.ReasonAddress},
	{url: "https://metadata.google.internal/computeMetadata/v1/", want: egress.ReasonAddress},
	{url: "https://internal.example.test/", want: egress.ReasonAddress},
	{url: "https://mixed.example.test/", want: egress.ReasonAddress},
	{url: "https://mapped.example.test/", want: egress.ReasonAddress},
	{url: "https://nat64.example.test/", want: egress.ReasonAddress},
	{url: "https://ula.example.test/", want: egress.ReasonAddress},
	{url: "https://translated.example.test/", want: egress.ReasonAddress},
	{url: "https://invalid.example.test/", want: egress.ReasonAddress},
	{url: "https://nowhere.example.test/", want: egress.ReasonUnresolvable},
	{url: "https://empty.example.test/", want: egress.ReasonUnresolvable},
	// URL tricks and schemes.
	{url: "https://api.example.test@internal.example.test/", want: egress.ReasonUserinfo},
	{url: "https://api.example.test:pw@127.0.0.1/", want: egress.ReasonUserinfo},
	{url: "https://api.example.test/", hostHeader: "169.254.169.254", want: egress.ReasonHostHeader},
	{url: "http://127.0.0.1/", want: egress.ReasonPlainHTTP},
	{url: "http://internal.example.test/", want: egress.ReasonPlainHTTP},
	{url: "file:///etc/passwd", want: egress.ReasonScheme},
	{url: "gopher://127.0.0.1:25/", want: egress.ReasonScheme},
	{url: "ftp://internal.example.test/", want: egress.ReasonScheme},
}

var plainHostRE = regexp.MustCompile(`^[a-z0-9._-]+$`)

// TestSSRFBattery sends every hostile destination through a client whose
// credential names each of those hosts and whose allowlist is "*", so that
// only the guards stand between the request and the secret. Each must be
// refused with its own audit row, with the secret store never read and
// nothing dialled.
func TestSSRFBattery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.resolver.table = map[string][]netip.Addr{
		"localhost":                addrs("127.0.0.1", "::1"),
		"metadata.google.internal": addrs("169.254.169.254"),
		"internal.example.test":    addrs("10.1.2.3"),
		"mixed.example.test":       addrs("93.184.216.34", "127.0.0.1"),
		"mapped.example.test":      addrs("::ffff:10.0.0.1"),
		"nat64.example.test":       addrs("64:ff9b::7f00:1"),
		"ula.example.test":         addrs("fd12:3456::1"),
		"translated.example.test":  addrs("::ffff:0:a00:1"),
		"invalid.example.test":     {{}}, // a resolver's zero netip.Addr
		"empty.example.test":       nil,
		"api.example.test":         addrs("93.184.216.34"),
	}
	var hosts []string
	for _, c := range ssrfCases {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatalf("%s: %v", c.url, err)
		}
		h := vault.NormalizeHost(u.Hostname())
		if _, err := netip.ParseAddr(h); err == nil && !strings.Contains(h, "%") || plainHostRE.MatchString(h) {
			hosts = append(hosts, h)
		}
	}
	b.setSecret(t, "token", "battery-secret-value", "bearer", hosts...)
	client := b.client(t, b.config("token", "*"))
	getsAtStart := b.backend.gets.Load()

	t.Run("cases", func(t *testing.T) {
		if len(ssrfCases) < 40 {
			t.Fatalf("only %d hostile destinations", len(ssrfCases))
		}
		for _, c := range ssrfCases {
			t.Run(c.url, func(t *testing.T) {
				t.Parallel()
				run := "ssrf " + c.url + " " + c.hostHeader
				req, err := http.NewRequestWithContext(egress.WithRun(t.Context(), run), http.MethodGet, c.url, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Host = c.hostHeader
				resp, err := client.Do(req)
				if err == nil {
					resp.Body.Close()
					t.Fatalf("%s was not refused: status %d", c.url, resp.StatusCode)
				}
				reason, ok := refusal(err)
				if !ok || reason != c.want {
					t.Fatalf("%s: err = %v, want a refusal for %q", c.url, err, c.want)
				}
				row := b.oneRow(t, run)
				if row.Action != audit.ActionHTTPCall || row.OK || row.Status != 0 || row.Reason != string(c.want) {
					t.Fatalf("audit row = %+v, want a failed http_call with reason %q", row, c.want)
				}
				if strings.Contains(row.Path, "?") {
					t.Fatalf("audit row path carries a query: %q", row.Path)
				}
			})
		}
	})

	if n := b.backend.gets.Load() - getsAtStart; n != 0 {
		t.Errorf("the secret store was read %d times during the battery", n)
	}
	if n := b.secrets.applies.Load(); n != 0 {
		t.Errorf("a credential was applied %d times during the battery", n)
	}
	if d := b.dialer.addresses(); len(d) != 0 {
		t.Errorf("the battery dialled %v", d)
	}

	// Control: the same harness does see a request that is allowed, so the
	// assertions above can fail.
	srv := newRecorder(t, nil)
	b.setSecret(t, "control", "battery-secret-value", "bearer", "127.0.0.1")
	ctl := b.client(t, b.config("control", "127.0.0.1"))
	resp, err := get(t.Context(), t, ctl, srv.srv.URL+"/ok")
	if err != nil {
		t.Fatalf("control request: %v", err)
	}
	resp.Body.Close()
	if got := srv.received(); len(got) != 1 || got[0].Authorization != "Bearer battery-secret-value" {
		t.Fatalf("control request: server saw %+v", got)
	}
	if b.secrets.applies.Load() != 1 || len(b.dialer.addresses()) != 1 {
		t.Fatalf("control request: %d applies, dialled %v", b.secrets.applies.Load(), b.dialer.addresses())
	}
}

// TestHostNotAllowed: a host that is neither the credential's nor in the
// allowlist is refused before anything else happens.
func TestHostNotAllowed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.setSecret(t, "token", "s3cret", "bearer", "api.example.test")
	c := b.client(t, b.config("token", "*.example.org"))
	for _, u := range []string{"https://evil.example.net/", "https://example.org/", "https://api.example.test.evil.net/"} {
		ctx := egress.WithRun(t.Context(), u)
		_, err := get(ctx, t, c, u)
		if reason, _ := refusal(err); reason != egress.ReasonHost {
			t.Errorf("%s: %v, want a host refusal", u, err)
		}
		if row := b.oneRow(t, u); row.Reason != string(egress.ReasonHost) {
			t.Errorf("%s: row %+v", u, row)
		}
	}
	if b.resolver.lookups("evil.example.net") != 0 {
		t.Error("a host refused by the allowlist was resolved")
	}
}

// TestDNSAnswerChangingBetweenCheckAndDial: the resolver first answers with
// an allowed address and then with a forbidden one. The dial must use the
// vetted first answer, never a second lookup; the next request, which sees
// the forbidden answer, is refused. Both servers are on loopback, on the same
// port: a re-resolving dialer would reach the victim.
func TestDNSAnswerChangingBetweenCheckAndDial(t *testing.T) {
	t.Parallel()
	b := setup(t)
	victim := newRecorder(t, nil) // 127.0.0.1:P, not allowed
	_, port, _ := strings.Cut(strings.TrimPrefix(victim.srv.URL, "http://"), ":")
	legit, err := listenOn(t, "127.0.0.2:"+port, nil)
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2 here: %v", err)
	}
	b.resolver.answer = func(host string, n int) ([]netip.Addr, error) {
		if n == 1 {
			return addrs("127.0.0.2"), nil
		}
		return addrs("127.0.0.1"), nil
	}
	b.setSecret(t, "token", "rebind-secret", "bearer", "rebind.example.test")
	cfg := b.config("token", "rebind.example.test", "127.0.0.2")
	cfg.DNSMemo = -1
	c := b.client(t, cfg)
	target := "http://rebind.example.test:" + port + "/"

	resp, err := get(egress.WithRun(t.Context(), "first"), t, c, target)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := legit.received(); len(got) != 1 || got[0].Authorization != "Bearer rebind-secret" {
		t.Fatalf("the vetted server saw %+v", got)
	}
	if n := b.resolver.lookups("rebind.example.test"); n != 1 {
		t.Fatalf("one request resolved the name %d times; the dialer must not resolve", n)
	}

	_, err = get(egress.WithRun(t.Context(), "second"), t, c, target)
	if reason, _ := refusal(err); reason != egress.ReasonAddress {
		t.Fatalf("after the answer changed: %v, want an address refusal", err)
	}
	if row := b.oneRow(t, "second"); row.Reason != string(egress.ReasonAddress) {
		t.Fatalf("row %+v", row)
	}
	if got := victim.received(); len(got) != 0 {
		t.Fatalf("the victim at 127.0.0.1 was reached: %+v", got)
	}
	if d := b.dialer.addresses(); !slices.Equal(d, []string{"127.0.0.2:" + port}) {
		t.Fatalf("dialled %v, want only the vetted address", d)
	}
	if n := b.secrets.applies.Load(); n != 1 {
		t.Fatalf("the credential was applied %d times, want once (the vetted request)", n)
	}
}

// TestRedirectIsNeverFollowed: a server the client may reach redirects to
// cloud metadata and to a loopback victim. NewClient returns the 3xx as it
// is; a plain http.Client over the Transport has its follow-up refused.
func TestRedirectIsNeverFollowed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	victim, err := listenOn(t, "127.0.0.2:0", nil)
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2 here: %v", err)
	}
	for _, location := range []string{"http://169.254.169.254/latest/meta-data/", victim.srv.URL + "/steal"} {
		t.Run(location, func(t *testing.T) {
			srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, location, http.StatusFound)
			})
			b.setSecret(t, "token", "redirect-secret", "bearer", "127.0.0.1")
			cfg := b.config("token", "127.0.0.1")

			run := "redirect " + location
			resp, err := get(egress.WithRun(t.Context(), run), t, b.client(t, cfg), srv.srv.URL+"/start")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != location {
				t.Fatalf("got %d to %q, want the 302 itself", resp.StatusCode, resp.Header.Get("Location"))
			}
			if row := b.oneRow(t, run); row.Status != http.StatusFound || row.OK || row.Reason != string(egress.ReasonRedirect) {
				t.Fatalf("row %+v, want a failed 302 'redirect not followed'", row)
			}

			tr, err := egress.NewTransport(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(tr.CloseIdleConnections)
			run2 := run + " (plain client)"
			_, err = get(egress.WithRun(t.Context(), run2), t, &http.Client{Transport: tr}, srv.srv.URL+"/start")
			if !errors.Is(err, egress.ErrRefused) {
				t.Fatalf("following through a plain client: %v, want a refusal", err)
			}
			rows := b.rows(t, run2)
			if len(rows) != 2 || rows[0].Reason != string(egress.ReasonRedirect) || rows[1].Reason != string(egress.ReasonRedirectFollow) {
				t.Fatalf("rows %+v, want the 302 and the refused follow-up", rows)
			}
			for _, s := range srv.received() {
				if s.Path != "/start" {
					t.Fatalf("the redirect was followed to %s", s.Path)
				}
			}
		})
	}
	if got := victim.received(); len(got) != 0 {
		t.Fatalf("the victim was reached: %+v", got)
	}
	for _, d := range b.dialer.addresses() {
		if !strings.HasPrefix(d, "127.0.0.1:") {
			t.Fatalf("dialled %s", d)
		}
	}
}
