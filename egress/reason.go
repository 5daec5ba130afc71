package egress

// Reason is the fixed literal an audit row carries to say why a call ended
// as it did. Reasons are never built from upstream text.
type Reason string

// Refusals: nothing was sent and no secret was read. The audit action is
// http_call, not ok.
const (
	// ReasonMalformedURL: the URL has no host or an opaque form.
	ReasonMalformedURL Reason = "malformed URL"
	// ReasonScheme: the scheme is neither http nor https.
	ReasonScheme Reason = "scheme not allowed"
	// ReasonPlainHTTP: http to a host not named literally in
	// Config.AllowedHosts.
	ReasonPlainHTTP Reason = "plain http to a host not explicitly allowed"
	// ReasonUserinfo: the URL carries user:password@ (as in
	// http://allowed@evil/).
	ReasonUserinfo Reason = "userinfo in URL"
	// ReasonHostHeader: Request.Host names another host than the URL.
	ReasonHostHeader Reason = "Host header differs from the URL's host"
	// ReasonZone: the host is an IPv6 literal with a zone (fe80::1%eth0).
	ReasonZone Reason = "IPv6 zone in host"
	// ReasonNumericHost: the host is a decimal, octal or hex spelling of an
	// address (2130706433, 0x7f.1, 0177.0.0.1, 127.1).
	ReasonNumericHost Reason = "non-canonical numeric host"
	// ReasonHost: the host is neither among the credential's hosts nor
	// matched by Config.AllowedHosts.
	ReasonHost Reason = "host not allowed"
	// ReasonRedirectFollow: an http.Client tried to follow a redirect
	// through the transport.
	ReasonRedirectFollow Reason = "redirect follow refused"
	// ReasonUnresolvable: the name did not resolve, or to no address.
	ReasonUnresolvable Reason = "host did not resolve"
	// ReasonAddress: an address of the host is in a refused range
	// (loopback, private, link-local, metadata, …) and not allowed
	// literally.
	ReasonAddress Reason = "address not allowed (SSRF guard)"
	// ReasonNoCredential: the credential no longer exists.
	ReasonNoCredential Reason = "credential missing"
	// ReasonBadCredential: the credential could not be opened (wrong key,
	// altered record) or was refused for the host.
	ReasonBadCredential Reason = "credential could not be read"
)

// Ends before send: no secret was read.
const (
	// ReasonCancelledBeforeSend: the context was cancelled before any
	// secret was read. Action http_call_cancelled_before_send.
	ReasonCancelledBeforeSend Reason = "cancelled before send: nothing egressed and no secret was read"
	// ReasonDeadlineBeforeSend: the context's deadline had passed before
	// any secret was read. Action http_call, not ok: a deadline is a
	// failure, not a cancellation.
	ReasonDeadlineBeforeSend Reason = "deadline exceeded before send: nothing egressed and no secret was read"
)

// Ends after the request was handed to the transport.
const (
	// ReasonCompleted: the response body was read to its end, status 2xx.
	ReasonCompleted Reason = "completed"
	// ReasonErrorStatus: the response was read; its status is not 2xx
	// or 3xx.
	ReasonErrorStatus Reason = "error status"
	// ReasonRedirect: a 3xx response was returned to the caller without
	// being followed.
	ReasonRedirect Reason = "redirect not followed"
	// ReasonClosedEarly: the caller closed the response body before its
	// end, with the context still live.
	ReasonClosedEarly Reason = "response body closed before its end"
	// ReasonTooLarge: the response body exceeded Config.MaxResponseBytes.
	ReasonTooLarge Reason = "response body over the cap"
	// ReasonTransport: the transport failed (connection refused or reset,
	// TLS, protocol error).
	ReasonTransport Reason = "transport failed"
	// ReasonBodyRead: reading the response body failed.
	ReasonBodyRead Reason = "response body read failed"
	// ReasonDeadline: the context's deadline passed in flight. Action
	// http_call, not ok.
	ReasonDeadline Reason = "deadline exceeded"
	// ReasonCancelledInFlight: the context was cancelled after the
	// request, credential included, was handed to the transport. Action
	// http_call_cancelled.
	ReasonCancelledInFlight Reason = "cancelled in flight: the request and credential were handed to the transport"
)
