package sqlstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/andonhq/andon/sqlstore/pgtest"
	"github.com/andonhq/andon/vault"
)

// On PostgreSQL, as on SQLite, nobody writes a secret while a rekey runs,
// between its read of the records and its rewrite: a put made meanwhile
// waits for the rekey to commit (the rekey locks the table), and then
// lands.
func TestPostgresPutWaitsForARekey(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgSchema(t)
	app := "andon-rekey-" + t.Name() // to tell this test's backends from others'
	s := openPGAt(t, pgtest.WithParams(dsn, map[string]string{"application_name": app}))
	rec := vault.Record{Name: "a", Placement: "header:X-Key", Hosts: []string{"a.example.com"}, KeyID: "k1", Sealed: []byte("old"), UpdatedAt: time.Unix(1, 0)}
	if err := s.SecretPut(ctx, rec, false); err != nil {
		t.Fatal(err)
	}
	monitor, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer monitor.Close(ctx)

	put := make(chan error, 1)
	err = s.SecretRekey(ctx, func(r vault.Record) (vault.Record, error) {
		go func() {
			put <- s.SecretPut(ctx, vault.Record{Name: "b", Placement: "header:X-Key", KeyID: "k1", Sealed: []byte("b"), UpdatedAt: time.Unix(2, 0)}, false)
		}()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			select {
			case err := <-put:
				return vault.Record{}, errors.Join(errors.New("a put landed while the rekey ran"), err)
			default:
			}
			var waiting int
			if err := monitor.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE application_name = $1 AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO secrets%'`, app).Scan(&waiting); err != nil {
				return vault.Record{}, err
			}
			if waiting > 0 {
				break
			}
			if time.Now().After(deadline) {
				return vault.Record{}, errors.New("the put neither landed nor waited")
			}
		}
		r.KeyID, r.Sealed = "k2", []byte("new")
		return r, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-put; err != nil {
		t.Fatalf("the put that waited for the rekey: %v", err)
	}
	for name, key := range map[string]string{"a": "k2", "b": "k1"} {
		if got, err := s.SecretGet(ctx, name); err != nil || got.KeyID != key {
			t.Errorf("secret %s: key %q, %v; want %s", name, got.KeyID, err, key)
		}
	}
}
