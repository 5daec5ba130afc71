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
// sequence number and MAC, the chain's first sequence number and its
// length), updated in the same transaction as each append. [Log.Verify]
// walks the rows in order and names the first bad one: an edited field, a
// deleted row (a gap in the sequence), swapped or reordered rows (a MAC that
// does not chain), and rows cut off the end (the head points past the last
// row).
//
// # Emptied, restarted and rolled-back logs
//
// Deleting every row and the head would leave what looks like a new, empty
// log, and the next rows would begin again at 1 and verify clean. So the
// store keeps a second copy of the sealed head, the mark, in a table of its
// own, written in the same transaction as the head (see [Heads]): an emptied
// log whose mark remains fails Verify; a chain shorter than the one its mark
// sealed fails Verify; and an append whose head is gone or moved back
// numbers on from the mark, so that no sequence number is sealed twice
// under one key and Verify names the rows that went missing. The seal makes
// the mark as hard to forge as the head: without the key it can only be
// deleted, or replaced by an older copy of itself.
//
// The mark lives in the same database as the rows because it must be
// written in their transaction: anywhere else (a file beside the key, a
// vault record, a database sequence, which PostgreSQL advances even for a
// rolled-back append) it would lag or lead the head after a crash and raise
// false alarms, or be unsealed, so that a reset would read as a new store.
//
// What the database alone cannot show: someone who can write to it and
// deletes the rows, the head and the mark together leaves a log that reads
// as one that never held a row (and the rows after it begin a chain of
// their own); someone who replaces the whole database with an older copy of
// itself leaves a log that verifies as that copy. To catch both, export the
// head ([Head.MarshalText]; "andon audit head" prints it) now and then, keep
// it where the database's writers cannot reach it, and check the log
// against it ([Log.VerifyKept]; "andon audit verify --head"): the log must
// still hold the row the kept head names, with the MAC it records, under a
// key that seals it.
//
// # Storage
//
// The package holds no SQL. It talks to a [Store], three methods, which
// package sqlstore implements. Appends are atomic with respect to the chain:
// the store reads the head and the mark, calls back to build the row and
// the new head, and writes the row, the head and the mark in one
// transaction.
//
// # Quick start
//
//	log := audit.New(store, key)
//	_, err := log.Record(ctx, audit.Entry{Action: audit.ActionHTTPCall, Host: "api.example.com", …})
//	sum, err := log.Verify(ctx) // errors.Is(err, audit.ErrTampered) if the chain is broken
package audit
