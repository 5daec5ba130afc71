package vault

import (
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
)

// rootName names the internal record holding the root that [Vault.DeriveKey]
// derives from.
const rootName = internalPrefix + "root"

// DeriveKey returns a 32-byte key for the given purpose label (for example
// "audit hmac v1"), derived with HKDF-SHA256 from a random root that the vault
// creates on first use and keeps sealed under the master key. The derived key
// is never the master key, differs per label, and survives [Rotate], which
// re-seals the root with everything else.
func (v *Vault) DeriveKey(ctx context.Context, label string) ([]byte, error) {
	if label == "" {
		return nil, fmt.Errorf("%w: DeriveKey needs a label", ErrInvalid)
	}
	root, err := v.root(ctx)
	if err != nil {
		return nil, err
	}
	defer clear(root)
	k, err := hkdf.Key(sha256.New, root, nil, "andon "+label, KeySize)
	if err != nil {
		return nil, fmt.Errorf("vault: deriving a key: %w", err)
	}
	return k, nil
}

// root returns the derivation root, creating it if it does not exist. When
// two processes race to create it, the loser reads the winner's.
func (v *Vault) root(ctx context.Context) ([]byte, error) {
	for range 2 {
		rec, err := v.backend.SecretGet(ctx, rootName)
		if err == nil {
			plain, err := open(v.key, rec)
			if err != nil {
				return nil, err
			}
			return plain, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("vault: reading the key root: %w", err)
		}
		fresh := make([]byte, KeySize)
		if _, err := rand.Read(fresh); err != nil {
			return nil, fmt.Errorf("vault: generating the key root: %w", err)
		}
		rec, err = seal(v.key, rootName, "", nil, fresh)
		clear(fresh)
		if err != nil {
			return nil, err
		}
		rec.UpdatedAt = v.now().UTC()
		err = v.backend.SecretPut(ctx, rec, false)
		if err != nil && !errors.Is(err, ErrExists) {
			return nil, fmt.Errorf("vault: storing the key root: %w", err)
		}
	}
	return nil, fmt.Errorf("vault: the key root vanished while being created: %w", ErrNotFound)
}
