package egress

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net/http"
	"time"

	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/vault"
)

// Defaults for the zero values of [Config] fields.
const (
	// DNSMemoDefault is how long a successful lookup is reused.
	DNSMemoDefault = 5 * time.Second
	// MaxResponseBytesDefault caps a response body: 10 MiB.
	MaxResponseBytesDefault = 10 << 20
	// DialTimeoutDefault bounds one TCP dial of the default dialer.
	DialTimeoutDefault = 30 * time.Second
	// AuditTimeoutDefault bounds writing one audit row. The write runs
	// detached from the request's cancellation, so a cancelled call is
	// still recorded.
	AuditTimeoutDefault = 5 * time.Second
)

// Recorder writes audit rows. [*audit.Log] satisfies it.
type Recorder interface {
	Record(ctx context.Context, e audit.Entry) (audit.Row, error)
}

// Secrets describes and applies credentials. [*vault.Vault] satisfies it.
type Secrets interface {
	// Info returns a credential's metadata without reading its value.
	Info(ctx context.Context, name string) (vault.Info, error)
	// Apply puts the credential on req.
	Apply(ctx context.Context, name string, req *http.Request) error
}

// Config configures a [Transport]. Purpose and Audit are required; every
// other zero value means the documented default.
type Config struct {
	// Purpose says what the client is for ("mcp github", "model openai");
	// every audit row carries it. Required.
	Purpose string

	// Audit receives exactly one row per call. Required.
	Audit Recorder

	// Credential names the secret to put on requests to its hosts. Empty
	// means no credential. The secret's hosts join the host allowlist;
	// they never exempt an address from vetting.
	Credential string

	// Secrets holds Credential. Required when Credential is set.
	Secrets Secrets

	// AllowedHosts is the global host allowlist, beside the credential's
	// hosts. An entry is an exact host name ("api.example.com"), a
	// wildcard ("*.example.com", never the bare domain), "*" for any host,
	// an IP address or a CIDR ("10.1.0.0/16"). Address vetting still
	// applies to every host; IP and CIDR entries are its only bypass, for
	// the addresses they contain. Plain http is allowed only to hosts
	// named literally (exact name, or an IP inside an IP/CIDR entry).
	AllowedHosts []string

	// Resolver looks up host names. Nil means [net.DefaultResolver].
	Resolver Resolver

	// DNSMemo is how long a successful lookup is reused. Zero means
	// [DNSMemoDefault]; negative disables the memo.
	DNSMemo time.Duration

	// MaxResponseBytes caps a response body; reading past it fails with
	// [*ResponseTooLargeError]. Zero means [MaxResponseBytesDefault];
	// negative means no cap.
	MaxResponseBytes int64

	// Dial dials one vetted "IP:port"; the transport never hands it a
	// name. Nil means a [net.Dialer] with [DialTimeoutDefault].
	Dial DialFunc

	// TLSClientConfig is used for https. Nil means the default.
	TLSClientConfig *tls.Config

	// AuditTimeout bounds writing one audit row. Zero means
	// [AuditTimeoutDefault].
	AuditTimeout time.Duration

	// Logger receives refusals and audit-write failures, never a secret,
	// header value or query string. Nil means [slog.Default].
	Logger *slog.Logger
}
