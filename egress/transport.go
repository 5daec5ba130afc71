package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/vault"
)

// Transport is a guarded [http.RoundTripper]. It is safe for concurrent use.
// See the package documentation for what it does to each request.
type Transport struct {
	purpose      string
	audit        Recorder
	secrets      Secrets
	credential   string
	credHosts    []string
	allow        allowlist
	resolver     *memoResolver
	dial         DialFunc
	maxBody      int64
	auditTimeout time.Duration
	logger       *slog.Logger
	inner        *http.Transport
}

// NewTransport returns a Transport for cfg, which it copies. If cfg names a
// credential, NewTransport reads the credential's metadata (its hosts, not
// its value) and fails if it does not exist.
func NewTransport(ctx context.Context, cfg *Config) (*Transport, error) {
	if cfg == nil {
		return nil, errors.New("egress: NewTransport needs a Config")
	}
	if cfg.Purpose == "" {
		return nil, errors.New("egress: Config.Purpose is required")
	}
	if cfg.Audit == nil {
		return nil, errors.New("egress: Config.Audit is required")
	}
	allow, err := parseAllowlist(cfg.AllowedHosts)
	if err != nil {
		return nil, err
	}
	t := &Transport{
		purpose:      cfg.Purpose,
		audit:        cfg.Audit,
		secrets:      cfg.Secrets,
		credential:   cfg.Credential,
		allow:        allow,
		resolver:     &memoResolver{r: cfg.Resolver, ttl: cfg.DNSMemo},
		dial:         cfg.Dial,
		maxBody:      cfg.MaxResponseBytes,
		auditTimeout: cfg.AuditTimeout,
		logger:       cfg.Logger,
	}
	if t.resolver.r == nil {
		t.resolver.r = net.DefaultResolver
	}
	if t.resolver.ttl == 0 {
		t.resolver.ttl = DNSMemoDefault
	}
	if t.dial == nil {
		t.dial = (&net.Dialer{Timeout: DialTimeoutDefault}).DialContext
	}
	if t.maxBody == 0 {
		t.maxBody = MaxResponseBytesDefault
	}
	if t.auditTimeout <= 0 {
		t.auditTimeout = AuditTimeoutDefault
	}
	if t.logger == nil {
		t.logger = slog.Default()
	}
	if cfg.Credential != "" {
		if cfg.Secrets == nil {
			return nil, errors.New("egress: Config.Credential is set but Config.Secrets is nil")
		}
		info, err := cfg.Secrets.Info(ctx, cfg.Credential)
		if err != nil {
			return nil, fmt.Errorf("egress: credential: %w", err)
		}
		t.credHosts = slices.Clone(info.Hosts)
	}
	t.inner = &http.Transport{
		Proxy:                 nil, // a proxy would resolve the name itself, past the pin
		DialContext:           t.dialPinned,
		ForceAttemptHTTP2:     true,
		TLSClientConfig:       cfg.TLSClientConfig.Clone(),
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return t, nil
}

// NewClient returns an [http.Client] over a new [Transport] that never
// follows a redirect: a 3xx response is returned to the caller as it is.
func NewClient(ctx context.Context, cfg *Config) (*http.Client, error) {
	t, err := NewTransport(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &http.Client{
		Transport:     t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, nil
}

// CloseIdleConnections closes connections kept for reuse.
func (t *Transport) CloseIdleConnections() { t.inner.CloseIdleConnections() }

// RoundTrip sends req through the guards, in this order: scheme guard, host
// allowlist, cancellation check, resolution, address vetting, credential,
// send over a connection to a vetted address only. It writes exactly one
// audit row: now if the call ends here, or when the response body reaches
// its end, fails or is closed. The returned response's Request is req, never
// the copy that carried the credential.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	c := t.begin(req)
	resp, err := t.roundTrip(c, req)
	if err != nil && req.Body != nil {
		_ = req.Body.Close()
	}
	return resp, err
}

func (t *Transport) roundTrip(c *call, req *http.Request) (*http.Response, error) {
	ctx := c.ctx
	host, refused := t.check(req)
	if refused != nil {
		return nil, c.refuse(refused)
	}
	if ctx.Err() != nil { // pre-flight: before resolution and before any secret
		return nil, c.stopBeforeSend()
	}
	addrs, err := t.addresses(c, host)
	if err != nil {
		return nil, err
	}
	port := req.URL.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(req.URL.Scheme)]
	}
	out := req.Clone(context.WithValue(ctx, pinKey{}, &pin{host: host, port: port, addrs: addrs}))
	if t.credential != "" && slices.Contains(t.credHosts, host) {
		if ctx.Err() != nil { // resolution may have taken a while
			return nil, c.stopBeforeSend()
		}
		if err := t.secrets.Apply(ctx, t.credential, out); err != nil {
			reason := ReasonBadCredential
			if errors.Is(err, vault.ErrNotFound) {
				reason = ReasonNoCredential
			}
			return nil, c.refuse(&RefusedError{Reason: reason, Host: req.URL.Host, Err: err})
		}
	}
	c.propagate(out)
	resp, err := t.inner.RoundTrip(out)
	if err != nil {
		return nil, c.failInFlight(err)
	}
	resp.Request = req
	if resp.Body == nil || resp.Body == http.NoBody {
		c.endWithStatus(resp.StatusCode, "")
		return resp, nil
	}
	resp.Body = &body{rc: resp.Body, c: c, status: resp.StatusCode, limit: t.maxBody}
	return resp, nil
}

// check runs the scheme guard and the host allowlist, and returns the
// normalised host name.
func (t *Transport) check(req *http.Request) (string, *RefusedError) {
	u := req.URL
	if u == nil {
		return "", &RefusedError{Reason: ReasonMalformedURL}
	}
	refuse := func(r Reason, detail string) (string, *RefusedError) {
		return "", &RefusedError{Reason: r, Host: u.Host, Detail: detail}
	}
	if req.Response != nil {
		return refuse(ReasonRedirectFollow, "")
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return refuse(ReasonScheme, fmt.Sprintf("scheme %q", scheme))
	}
	if u.User != nil {
		return refuse(ReasonUserinfo, "")
	}
	if u.Opaque != "" || u.Host == "" {
		return refuse(ReasonMalformedURL, "")
	}
	if req.Host != "" && !strings.EqualFold(req.Host, u.Host) {
		return refuse(ReasonHostHeader, "")
	}
	raw := u.Hostname()
	if strings.Contains(raw, "%") {
		return refuse(ReasonZone, "")
	}
	host := vault.NormalizeHost(raw)
	if _, err := netip.ParseAddr(host); err != nil && looksNumeric(host) {
		return refuse(ReasonNumericHost, "")
	}
	if scheme == "http" && !t.allow.literal(host) {
		return refuse(ReasonPlainHTTP, "")
	}
	if !slices.Contains(t.credHosts, host) && !t.allow.matches(host) {
		return refuse(ReasonHost, "")
	}
	return host, nil
}

// addresses resolves host (unless it is an IP literal) and vets every
// address. On failure it has already ended the call.
func (t *Transport) addresses(c *call, host string) ([]netip.Addr, error) {
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		addrs, err = t.resolver.lookup(c.ctx, host)
		if err != nil && c.ctx.Err() != nil {
			return nil, c.stopBeforeSend()
		}
		if err != nil || len(addrs) == 0 {
			return nil, c.refuse(&RefusedError{Reason: ReasonUnresolvable, Host: c.entry.Host, Err: err})
		}
	}
	for _, a := range addrs {
		if t.allow.bypass(a) {
			continue
		}
		if name := refusedRange(a); name != "" {
			return nil, c.refuse(&RefusedError{Reason: ReasonAddress, Host: c.entry.Host, Detail: fmt.Sprintf("%s is %s", a, name)})
		}
	}
	return addrs, nil
}

// looksNumeric reports whether host, which is not a canonical IP literal, is
// a numeric spelling that some resolvers read as an address (2130706433,
// 0x7f.1, 0177.0.0.1, 127.1), or ends in an all-digit label, which no real
// top-level domain does.
func looksNumeric(host string) bool {
	labels := strings.Split(host, ".")
	if isDigits(labels[len(labels)-1]) {
		return true
	}
	for _, l := range labels {
		if !isDigits(l) && !(strings.HasPrefix(l, "0x") && isHex(l[2:])) {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

func isHex(s string) bool {
	return strings.Trim(s, "0123456789abcdef") == ""
}

// body caps a response body and ends the call when the body is done.
type body struct {
	rc     io.ReadCloser
	c      *call
	status int
	limit  int64 // negative: no cap
	n      int64
	err    error // sticky: the cap was exceeded
}

func (b *body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.limit >= 0 {
		if room := b.limit + 1 - b.n; int64(len(p)) > room {
			p = p[:room]
		}
	}
	n, err := b.rc.Read(p)
	b.n += int64(n)
	if b.limit >= 0 && b.n > b.limit {
		n -= int(b.n - b.limit)
		b.err = &ResponseTooLargeError{Limit: b.limit}
		b.c.end(audit.ActionHTTPCall, b.status, false, ReasonTooLarge)
		return n, b.err
	}
	switch {
	case err == io.EOF:
		b.c.endWithStatus(b.status, "")
	case err != nil:
		b.c.endAfter(b.status, ReasonBodyRead)
		err = b.c.contextError(err)
	}
	return n, err
}

func (b *body) Close() error {
	b.c.endWithStatus(b.status, ReasonClosedEarly)
	return b.rc.Close()
}
