package vault

import "errors"

// Errors returned by the vault, matched with [errors.Is]. None of them, nor
// any error wrapping them, carries a secret's value.
var (
	// ErrNotFound means no secret has the given name. Backends return it
	// (wrapped or not) from lookups and deletes of a missing record.
	ErrNotFound = errors.New("vault: secret not found")
	// ErrExists means a record was created under a name already taken.
	ErrExists = errors.New("vault: secret already exists")
	// ErrWrongKey means a record was sealed under a different master key
	// than the one in use. Nothing was changed.
	ErrWrongKey = errors.New("vault: wrong master key")
	// ErrCorrupt means a record failed authentication under the right key:
	// its ciphertext or its bound metadata (name, placement, hosts) was
	// altered in the store.
	ErrCorrupt = errors.New("vault: sealed record failed authentication")
	// ErrBadKey means a master key could not be parsed or read.
	ErrBadKey = errors.New("vault: bad master key")
	// ErrHostNotAllowed means a secret was asked for on a request to a host
	// that is not among the secret's hosts.
	ErrHostNotAllowed = errors.New("vault: host not allowed for this secret")
	// ErrInvalid means a name, placement, host list or value was refused.
	ErrInvalid = errors.New("vault: invalid secret")
)
