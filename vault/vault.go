package vault

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Vault seals, stores and applies secrets. It is safe for concurrent use.
type Vault struct {
	backend Backend
	key     Key
	now     func() time.Time
}

// New returns a vault over backend using key. It panics if key is the zero
// Key, a programming error.
func New(backend Backend, key Key) *Vault {
	if key.IsZero() {
		panic("vault: New with the zero Key")
	}
	return &Vault{backend: backend, key: key, now: time.Now}
}

// Info describes a secret without its value.
type Info struct {
	// Name is the secret's name.
	Name string
	// Placement is where the secret goes on a request.
	Placement Placement
	// Hosts are the hosts the secret may be sent to.
	Hosts []string
	// KeyID is the ID of the master key that sealed it.
	KeyID string
	// UpdatedAt is when its value was last written.
	UpdatedAt time.Time
}

// Set seals value and stores it under name, replacing any secret of that
// name. value may be cleared by the caller once Set returns.
func (v *Vault) Set(ctx context.Context, name string, value []byte, p Placement, hosts []string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := p.validate(); err != nil {
		return err
	}
	if err := p.checkValue(value); err != nil {
		return fmt.Errorf("secret %q: %w", name, err)
	}
	hosts, err := normalizeHosts(hosts)
	if err != nil {
		return fmt.Errorf("secret %q: %w", name, err)
	}
	rec, err := seal(v.key, name, p.String(), hosts, value)
	if err != nil {
		return err
	}
	rec.UpdatedAt = v.now().UTC()
	if err := v.backend.SecretPut(ctx, rec, true); err != nil {
		return fmt.Errorf("vault: storing secret %q: %w", name, err)
	}
	return nil
}

// Info returns the metadata of the secret named name. It does not decrypt the
// value, and so succeeds under a wrong key (see [Vault.Check]).
func (v *Vault) Info(ctx context.Context, name string) (Info, error) {
	if err := checkName(name); err != nil {
		return Info{}, err
	}
	rec, err := v.backend.SecretGet(ctx, name)
	if err != nil {
		return Info{}, fmt.Errorf("secret %q: %w", name, err)
	}
	return infoOf(rec)
}

// List returns the metadata of every secret, ordered by name.
func (v *Vault) List(ctx context.Context) ([]Info, error) {
	recs, err := v.backend.SecretList(ctx)
	if err != nil {
		return nil, fmt.Errorf("vault: listing secrets: %w", err)
	}
	infos := make([]Info, 0, len(recs))
	for _, rec := range recs {
		if isInternal(rec.Name) {
			continue
		}
		info, err := infoOf(rec)
		if err != nil {
			return nil, err
		}
		infos = append(infos, info)
	}
	return infos, nil
}

// Remove deletes the secret named name.
func (v *Vault) Remove(ctx context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := v.backend.SecretDelete(ctx, name); err != nil {
		return fmt.Errorf("removing secret %q: %w", name, err)
	}
	return nil
}

// Apply puts the secret named name on req, where its placement says, if
// req's host is one of the secret's hosts. This is the only way a value
// leaves the vault. req must be the caller's own copy (see
// [http.Request.Clone]); it is modified in place. Errors match
// [ErrNotFound], [ErrHostNotAllowed], [ErrWrongKey] or [ErrCorrupt] and
// never contain the value.
func (v *Vault) Apply(ctx context.Context, name string, req *http.Request) error {
	if err := checkName(name); err != nil {
		return err
	}
	rec, err := v.backend.SecretGet(ctx, name)
	if err != nil {
		return fmt.Errorf("secret %q: %w", name, err)
	}
	p, err := ParsePlacement(rec.Placement)
	if err != nil {
		return fmt.Errorf("vault: secret %q: stored placement: %w", name, err)
	}
	host := NormalizeHost(req.URL.Hostname())
	if !hostIn(host, rec.Hosts) {
		return fmt.Errorf("secret %q, host %q: %w", name, host, ErrHostNotAllowed)
	}
	plain, err := open(v.key, rec)
	if err != nil {
		return err
	}
	defer clear(plain)
	p.put(req, string(plain))
	return nil
}

// Check opens every secret under the vault's key and reports the first that
// does not open, so a wrong master key is found before it matters.
func (v *Vault) Check(ctx context.Context) error {
	recs, err := v.backend.SecretList(ctx)
	if err != nil {
		return fmt.Errorf("vault: listing secrets: %w", err)
	}
	for _, rec := range recs {
		plain, err := open(v.key, rec)
		if err != nil {
			return err
		}
		clear(plain)
	}
	return nil
}

func infoOf(rec Record) (Info, error) {
	p, err := ParsePlacement(rec.Placement)
	if err != nil {
		return Info{}, fmt.Errorf("vault: secret %q: stored placement: %w", rec.Name, err)
	}
	return Info{Name: rec.Name, Placement: p, Hosts: rec.Hosts, KeyID: rec.KeyID, UpdatedAt: rec.UpdatedAt}, nil
}

func hostIn(host string, hosts []string) bool {
	for _, h := range hosts {
		if h == host {
			return true
		}
	}
	return false
}

// internalPrefix marks the vault's own records; checkName refuses it.
const internalPrefix = "andon:"

func isInternal(name string) bool { return strings.HasPrefix(name, internalPrefix) }
