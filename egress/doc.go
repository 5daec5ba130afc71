// Package egress is andon's guarded outbound HTTP: every request an agent
// makes on an operator's behalf — to an MCP server, to a model — goes through
// a [Transport], which injects the credential only after it has made sure
// the request may go where it is going, and records exactly one audit row.
//
// # What a request goes through
//
// [Transport.RoundTrip] runs these steps in this order and stops at the first
// that refuses:
//
//  1. Scheme guard: http or https only; plain http only to a host named
//     literally in [Config.AllowedHosts]. URLs with userinfo
//     (http://allowed@evil/), a Host header naming another host, an IPv6
//     zone, or a numeric spelling of an address (2130706433, 0x7f.1,
//     0177.0.0.1) are refused here too, as is a redirect that an
//     [http.Client] tries to follow through the transport.
//  2. Host allowlist: the credential's hosts plus [Config.AllowedHosts].
//  3. Pre-flight cancellation check. A cancelled context ends the call as
//     http_call_cancelled_before_send; no secret has been read and nothing
//     has been sent. An expired deadline ends it as a failed http_call.
//  4. Resolution, at request time, through [Config.Resolver] with a short
//     memo ([DNSMemoDefault]). A name that does not resolve is refused.
//  5. Vetting of every address: loopback, private, link-local and cloud
//     metadata, CGNAT, unspecified, multicast, broadcast, reserved,
//     documentation and benchmarking ranges, IPv6 unique-local,
//     IPv4-mapped, -translated and -compatible, NAT64, discard, and 6to4
//     or Teredo addresses embedding any of those; and an invalid address
//     from a resolver. One bad address refuses the request. Only IP and CIDR entries of [Config.AllowedHosts] exempt
//     the addresses they contain.
//  6. Pin: the vetted addresses travel with the request to the
//     transport's dialer, which dials only them and never resolves a name,
//     so a second, different DNS answer can never be used.
//  7. Credential: if the host is one of the credential's hosts, the
//     vault puts the secret on a copy of the request (checking the host
//     again against its own authenticated record). It is read here and
//     nowhere earlier.
//  8. Send. The transport's dialer then connects to a vetted address (or
//     reuses a connection it made to one). Redirects are never followed:
//     [NewClient] returns a 3xx response to the caller as it is.
//
// The response body is capped ([Config.MaxResponseBytes]).
//
// # Audit
//
// Each call writes one row to [Config.Audit], when the call is truly over:
// at once for a refusal or a failed round trip, and otherwise when the
// response body reaches its end, fails, exceeds the cap or is closed. The
// actions are http_call (ok or failed; a deadline is a failure),
// http_call_cancelled (the context was cancelled after the request and its
// credential were handed to the transport: treat the credential as having
// gone out) and http_call_cancelled_before_send. Cancellation is told from a
// deadline by the context: ctx.Err() and [context.Cause]. Each row carries
// a fixed-literal [Reason]. Rows are built from the caller's URL before the
// credential is placed, without the query string; no row, log line or error
// carries a secret, a header value or a query string. The run a call belongs
// to travels in its context ([WithRun]); its purpose comes from
// [Config.Purpose]. An OAuth token request made with [WithTokenLeg] is one
// oauth_token row instead (issuer, grant type, outcome; never a token or
// code), and [Transport.Vet] runs the guards on a URL without sending, so
// that a URL from metadata is refused before anything reads a secret for it.
//
// # Quick start
//
//	client, err := egress.NewClient(ctx, &egress.Config{
//		Purpose:    "mcp github",
//		Audit:      auditLog,   // *audit.Log
//		Secrets:    v,          // *vault.Vault
//		Credential: "github",   // its hosts join the allowlist
//	})
//	resp, err := client.Do(req.WithContext(egress.WithRun(ctx, runID)))
//
// Any HTTP code can use the result: it is a plain [*http.Client], and
// [*Transport] is a plain [http.RoundTripper].
//
// # Errors
//
// Refusals are [*RefusedError] (matching [ErrRefused]). Cancellations are
// [*CancelledError], matching [context.Canceled] and the context's cause;
// BeforeSend says whether anything egressed. Deadlines match
// [context.DeadlineExceeded]. A body over the cap reads as
// [*ResponseTooLargeError].
//
// # What it does not do
//
// The credential is placed on the request just before the request is handed
// to the inner transport, which dials (or reuses a connection) only then, so
// a dial that fails after step 7 has read the secret but sent nothing; its
// row is a failed http_call. A cancellation in that window is recorded as
// http_call_cancelled, the conservative answer.
package egress
