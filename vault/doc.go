// Package vault keeps named secrets encrypted at rest and lets their
// plaintext out in exactly one way: into an outgoing HTTP request.
//
// Each secret is sealed with AES-256-GCM under a 32-byte master key, with a
// fresh random nonce on every write. The secret's name, its placement and the
// hosts it may be sent to are bound to the ciphertext as additional data, so a
// record whose metadata was edited in the store no longer opens. The master key
// comes from the environment (ANDON_MASTER_KEY, base64) or a key file; see
// [ParseKey], [ReadKeyFile] and [WriteKeyFile].
//
// # Quick start
//
//	v := vault.New(backend, key)
//	err := v.Set(ctx, "github", []byte(token), vault.Placement{Kind: vault.Bearer}, []string{"api.github.com"})
//	…
//	err = v.Apply(ctx, "github", req) // sets "Authorization: Bearer …" on req
//
// There is no method that returns a secret's value. [Vault.Apply] decrypts it
// only to place it on a request for one of the secret's hosts; egress calls it
// after its own checks (scheme, host allowlist, cancellation, address
// vetting), so a refused or already-cancelled request never reads a secret.
//
// # Storage
//
// The vault holds no SQL. It talks to a [Backend], a small interface over
// sealed [Record] values, which package sqlstore implements.
//
// # Keys
//
// A record remembers the ID of the key that sealed it ([Key.ID]), so a wrong
// master key is reported as [ErrWrongKey], distinct from a record that fails
// authentication ([ErrCorrupt]); neither changes anything stored. [Rotate]
// re-seals every record under a new key in one transaction: either every
// secret moves to the new key or none does.
//
// [Vault.DeriveKey] hands other packages (the audit log) a key of their own,
// derived with HKDF-SHA256 from a random root that is itself sealed in the
// vault, so rotating the master key never invalidates what such a key signed.
package vault
