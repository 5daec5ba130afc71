package egress_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/egress"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/vault"
)

// countingBackend counts every read of the secret store.
type countingBackend struct {
	vault.Backend
	gets atomic.Int64
}

func (c *countingBackend) SecretGet(ctx context.Context, name string) (vault.Record, error) {
	c.gets.Add(1)
	return c.Backend.SecretGet(ctx, name)
}

// countingSecrets counts every attempt to put a secret on a request.
type countingSecrets struct {
	*vault.Vault
	applies atomic.Int64
}

func (c *countingSecrets) Apply(ctx context.Context, name string, req *http.Request) error {
	c.applies.Add(1)
	return c.Vault.Apply(ctx, name, req)
}

// fakeResolver answers from a table; answer, if set, overrides it. It
// counts lookups per host.
type fakeResolver struct {
	mu     sync.Mutex
	table  map[string][]netip.Addr
	answer func(host string, n int) ([]netip.Addr, error)
	calls  map[string]int
}

func (r *fakeResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls == nil {
		r.calls = make(map[string]int)
	}
	r.calls[host]++
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r.answer != nil {
		return r.answer(host, r.calls[host])
	}
	addrs, ok := r.table[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return addrs, nil
}

func (r *fakeResolver) lookups(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[host]
}

// loopbackDialer dials only loopback addresses and records every address it
// is asked for: whatever the guard does, no test traffic leaves the machine.
type loopbackDialer struct {
	mu     sync.Mutex
	dialed []string
}

func (d *loopbackDialer) dial(ctx context.Context, network, address string) (net.Conn, error) {
	d.mu.Lock()
	d.dialed = append(d.dialed, address)
	d.mu.Unlock()
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !ap.Addr().IsLoopback() {
		return nil, fmt.Errorf("test dialer: %s is not loopback; refusing to touch the network", address)
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, address)
}

func (d *loopbackDialer) addresses() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.dialed...)
}

// syncBuffer is a bytes.Buffer safe for concurrent writes, for slog.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type testBundle struct {
	dbPath   string
	backend  *countingBackend
	vault    *vault.Vault
	secrets  *countingSecrets
	log      *audit.Log
	resolver *fakeResolver
	dialer   *loopbackDialer
	logs     *syncBuffer
	logger   *slog.Logger
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	dbPath := filepath.Join(t.TempDir(), "andon.db")
	store, err := sqlstore.Open(t.Context(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	key, err := vault.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	backend := &countingBackend{Backend: store}
	v := vault.New(backend, key)
	auditKey, err := v.DeriveKey(t.Context(), "audit hmac v1")
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	return &testBundle{
		dbPath:   dbPath,
		backend:  backend,
		vault:    v,
		secrets:  &countingSecrets{Vault: v},
		log:      audit.New(store, auditKey),
		resolver: &fakeResolver{},
		dialer:   &loopbackDialer{},
		logs:     logs,
		logger:   slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

// config returns a Config wired to the bundle's audit log, secrets,
// resolver, dialer and logger.
func (b *testBundle) config(credential string, allowed ...string) *egress.Config {
	return &egress.Config{
		Purpose:      "test",
		Audit:        b.log,
		Credential:   credential,
		Secrets:      b.secrets,
		AllowedHosts: allowed,
		Resolver:     b.resolver,
		Dial:         b.dialer.dial,
		Logger:       b.logger,
	}
}

func (b *testBundle) client(t *testing.T, cfg *egress.Config) *http.Client {
	t.Helper()
	c, err := egress.NewClient(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func (b *testBundle) setSecret(t *testing.T, name, value, placement string, hosts ...string) {
	t.Helper()
	p, err := vault.ParsePlacement(placement)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.vault.Set(t.Context(), name, []byte(value), p, hosts); err != nil {
		t.Fatal(err)
	}
}

// rows returns the audit rows of one run.
func (b *testBundle) rows(t *testing.T, run string) []audit.Row {
	t.Helper()
	rows, err := b.log.List(context.WithoutCancel(t.Context()), audit.Query{RunID: run})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// oneRow asserts that run has exactly one audit row and returns it.
func (b *testBundle) oneRow(t *testing.T, run string) audit.Row {
	t.Helper()
	rows := b.rows(t, run)
	if len(rows) != 1 {
		t.Fatalf("run %q has %d audit rows, want exactly 1: %+v", run, len(rows), rows)
	}
	return rows[0]
}

// seen is what a test server received.
type seen struct {
	Path          string
	RawQuery      string
	Authorization string
}

// recorder is a loopback test server that records what reaches it.
type recorder struct {
	srv     *httptest.Server
	mu      sync.Mutex
	reqs    []seen
	handler http.HandlerFunc
}

func newRecorder(t *testing.T, handler http.HandlerFunc) *recorder {
	t.Helper()
	r := &recorder{handler: handler}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *recorder) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.reqs = append(r.reqs, seen{Path: req.URL.Path, RawQuery: req.URL.RawQuery, Authorization: req.Header.Get("Authorization")})
	r.mu.Unlock()
	if r.handler != nil {
		r.handler(w, req)
		return
	}
	_, _ = w.Write([]byte("hello"))
}

func (r *recorder) received() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seen(nil), r.reqs...)
}

// listenOn starts a recorder on a given loopback address.
func listenOn(t *testing.T, addr string, handler http.HandlerFunc) (*recorder, error) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	r := &recorder{handler: handler}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	r.srv.Listener = ln
	r.srv.Start()
	t.Cleanup(r.srv.Close)
	return r, nil
}

func get(ctx context.Context, t *testing.T, c *http.Client, url string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.Do(req)
}

func refusal(err error) (egress.Reason, bool) {
	var re *egress.RefusedError
	if errors.As(err, &re) && errors.Is(err, egress.ErrRefused) {
		return re.Reason, true
	}
	return "", false
}
