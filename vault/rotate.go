package vault

import (
	"context"
	"fmt"
)

// Rotate re-seals every record in backend, internal ones included, from
// oldKey to newKey, in one transaction. If any record does not open under
// oldKey (a wrong key, a corrupt record), nothing changes and the error says
// which record. Records already sealed under newKey are kept as they are, so
// running Rotate again after a success is harmless.
//
// The caller stores newKey before or atomically with calling Rotate, so that
// a crash never leaves records sealed under a key that exists nowhere.
func Rotate(ctx context.Context, backend Backend, oldKey, newKey Key) error {
	if oldKey.IsZero() || newKey.IsZero() {
		return fmt.Errorf("%w: Rotate with the zero Key", ErrBadKey)
	}
	err := backend.SecretRekey(ctx, func(rec Record) (Record, error) {
		if rec.KeyID == newKey.ID() {
			return rec, nil
		}
		plain, err := open(oldKey, rec)
		if err != nil {
			return Record{}, err
		}
		defer clear(plain)
		next, err := seal(newKey, rec.Name, rec.Placement, rec.Hosts, plain)
		if err != nil {
			return Record{}, err
		}
		next.UpdatedAt = rec.UpdatedAt
		return next, nil
	})
	if err != nil {
		return fmt.Errorf("vault: rotating the master key (nothing changed): %w", err)
	}
	return nil
}
