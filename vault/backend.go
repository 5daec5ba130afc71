package vault

import (
	"context"
	"time"
)

// Record is a secret as the [Backend] stores it: metadata in the clear, the
// value sealed. The metadata is bound to the ciphertext, so editing it in the
// store makes the record fail to open ([ErrCorrupt]).
type Record struct {
	// Name is the secret's name, the record's key.
	Name string
	// Placement is [Placement.String] of the secret's placement.
	Placement string
	// Hosts are the hosts the secret may be sent to, normalised and sorted.
	Hosts []string
	// KeyID is the [Key.ID] of the master key that sealed Sealed.
	KeyID string
	// Sealed is the AES-256-GCM nonce followed by the ciphertext and tag.
	Sealed []byte
	// UpdatedAt is when the value was last written.
	UpdatedAt time.Time
}

// Backend stores sealed records. Implementations must be safe for concurrent
// use. They never see a plaintext value.
type Backend interface {
	// SecretGet returns the record named name, or an error matching
	// [ErrNotFound].
	SecretGet(ctx context.Context, name string) (Record, error)
	// SecretPut stores rec. If a record of that name exists, it is replaced
	// when replace is true, and the error matches [ErrExists] otherwise.
	SecretPut(ctx context.Context, rec Record, replace bool) error
	// SecretDelete removes the record named name, or returns an error
	// matching [ErrNotFound].
	SecretDelete(ctx context.Context, name string) error
	// SecretList returns every record, ordered by name.
	SecretList(ctx context.Context) ([]Record, error)
	// SecretRekey replaces every record by reseal(record) in one
	// transaction. If reseal returns an error for any record, nothing
	// changes and that error is returned.
	SecretRekey(ctx context.Context, reseal func(Record) (Record, error)) error
}
