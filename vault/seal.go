package vault

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"fmt"
	"strings"
)

// additionalData binds a record's metadata to its ciphertext.
func additionalData(name, placement string, hosts []string) []byte {
	return []byte("andon vault v1\x00" + name + "\x00" + placement + "\x00" + strings.Join(hosts, ","))
}

func newAEAD(k Key) (cipher.AEAD, error) {
	block, err := aes.NewCipher(k.b[:])
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	return cipher.NewGCM(block)
}

// seal encrypts value into a record carrying the given metadata.
func seal(k Key, name, placement string, hosts []string, value []byte) (Record, error) {
	aead, err := newAEAD(k)
	if err != nil {
		return Record{}, err
	}
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(value)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return Record{}, fmt.Errorf("vault: generating a nonce: %w", err)
	}
	return Record{
		Name:      name,
		Placement: placement,
		Hosts:     hosts,
		KeyID:     k.ID(),
		Sealed:    aead.Seal(nonce, nonce, value, additionalData(name, placement, hosts)),
	}, nil
}

// open decrypts rec. The caller clears the returned slice when done.
func open(k Key, rec Record) ([]byte, error) {
	if rec.KeyID != k.ID() {
		return nil, fmt.Errorf("secret %q was sealed with master key %s, but the key in use is %s: %w", rec.Name, rec.KeyID, k.ID(), ErrWrongKey)
	}
	aead, err := newAEAD(k)
	if err != nil {
		return nil, err
	}
	ns := aead.NonceSize()
	if len(rec.Sealed) < ns+aead.Overhead() {
		return nil, fmt.Errorf("secret %q: %w", rec.Name, ErrCorrupt)
	}
	plain, err := aead.Open(nil, rec.Sealed[:ns], rec.Sealed[ns:], additionalData(rec.Name, rec.Placement, rec.Hosts))
	if err != nil {
		return nil, fmt.Errorf("secret %q: %w", rec.Name, ErrCorrupt)
	}
	return plain, nil
}
