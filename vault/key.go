package vault

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

// KeySize is the length of a master key in bytes (AES-256).
const KeySize = 32

// EnvMasterKey is the environment variable that may carry the master key,
// base64-encoded.
const EnvMasterKey = "ANDON_MASTER_KEY"

// Key is a master key. Its bytes never print: every fmt verb and slog show
// only its [Key.ID]. The zero Key is not a valid key.
type Key struct {
	b [KeySize]byte
}

// NewKey returns a fresh random key.
func NewKey() (Key, error) {
	var k Key
	if _, err := rand.Read(k.b[:]); err != nil {
		return Key{}, fmt.Errorf("vault: generating a master key: %w", err)
	}
	return k, nil
}

// ParseKey decodes a base64 master key (standard or URL alphabet, padded or
// not). Surrounding white space is ignored. The error never repeats the input.
func ParseKey(s string) (Key, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Key{}, fmt.Errorf("%w: the key is empty", ErrBadKey)
	}
	var raw []byte
	var err error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if raw, err = enc.DecodeString(s); err == nil {
			break
		}
	}
	if err != nil {
		return Key{}, fmt.Errorf("%w: not base64", ErrBadKey)
	}
	defer clear(raw)
	if len(raw) != KeySize {
		return Key{}, fmt.Errorf("%w: %d bytes, want %d", ErrBadKey, len(raw), KeySize)
	}
	var k Key
	copy(k.b[:], raw)
	return k, nil
}

// ReadKeyFile reads a master key written by [WriteKeyFile]. A file that does
// not exist yields an error matching [fs.ErrNotExist]; a file that group or
// others can read is refused, as ssh refuses such a private key.
func ReadKeyFile(path string) (Key, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Key{}, fmt.Errorf("vault: reading key file: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return Key{}, fmt.Errorf("%w: key file %s has mode %#o; it must be readable by its owner only (chmod 600)", ErrBadKey, path, perm)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Key{}, fmt.Errorf("vault: reading key file: %w", err)
	}
	defer clear(data)
	k, err := ParseKey(string(data))
	if err != nil {
		return Key{}, fmt.Errorf("key file %s: %w", path, err)
	}
	return k, nil
}

// WriteKeyFile writes k, base64-encoded, to a new file at path with mode 0600.
// It never overwrites: if path exists the error matches [fs.ErrExist].
func WriteKeyFile(path string, k Key) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("vault: writing key file: %w", err)
	}
	_, err = io.WriteString(f, base64.StdEncoding.EncodeToString(k.b[:])+"\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.Join(fmt.Errorf("vault: writing key file: %w", err), os.Remove(path))
	}
	return nil
}

// ID identifies k without revealing it: 16 hex digits of an HMAC of a fixed
// label under k. Records store it so that a wrong key can be named.
func (k Key) ID() string {
	m := hmac.New(sha256.New, k.b[:])
	m.Write([]byte("andon vault key id v1"))
	return hex.EncodeToString(m.Sum(nil)[:8])
}

// IsZero reports whether k is the zero Key, which is never a valid key.
func (k Key) IsZero() bool { return k == Key{} }

// String returns "vault.Key(ID)", never the key's bytes.
func (k Key) String() string { return "vault.Key(" + k.ID() + ")" }

// Format prints k as [Key.String] whatever the verb, so that %x or %d cannot
// reveal the key.
func (k Key) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, k.String()) }

// LogValue shows only the key's ID in structured logs.
func (k Key) LogValue() slog.Value { return slog.StringValue(k.String()) }
