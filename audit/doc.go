// Package audit is andon's append-only, hash-chained audit log.
//
// Every outbound HTTP call that egress makes leaves exactly one row: what was
// called (method, host, path without its query string), on whose behalf
// (purpose, run id), how it ended (action, status, ok, a fixed-literal
// reason) and how long it took. A row never holds a secret, a header value or
// a query string. The API adds a row for every request it refuses
// (api_denied: who, by token id and name, never the token; what; why), and
// the CLI one for every change to secrets and tokens.
//
// # The chain
//
// Each row carries an HMAC-SHA256 over its own fields and the previous row's
// MAC, keyed with a key derived for the log (never the master key itself; see
// vault.Vault.DeriveKey). The store also keeps a sealed head (the last
// sequence number and MAC), updated in the same transaction as each append.
// [Log.Verify] walks the rows in order and names the first bad one: an edited
// field, a deleted row (a gap in the sequence), swapped or reordered rows
// (a MAC that does not chain), and rows cut off the end (the head points past
// the last row). Someone who can write to the store can still replace it with
// an older copy of itself; compare the head that Verify reports with one you
// kept to catch that.
//
// # Storage
//
// The package holds no SQL. It talks to a [Store], three methods, which
// package sqlstore implements. Appends are atomic with respect to the chain:
// the store reads the head, calls back to build the row and the new head,
// and writes both in one transaction.
//
// # Quick start
//
//	log := audit.New(store, key)
//	_, err := log.Record(ctx, audit.Entry{Action: audit.ActionHTTPCall, Host: "api.example.com", …})
//	sum, err := log.Verify(ctx) // errors.Is(err, audit.ErrTampered) if the chain is broken
package audit
