// Package storetest is the conformance suite that every implementation of
// andon's store interfaces (vault.Backend, audit.Store, agent.Store,
// catalogue.SettingsStore, token.Store) must pass. Each store's tests
// call [Exercise], [ExerciseRuns], [ExerciseToolSettings] and
// [ExerciseTokens] with a constructor of fresh, empty stores.
package storetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/vault"
)

// Store is what a full andon store implements.
type Store interface {
	vault.Backend
	audit.Store
}

// Exercise runs the suite. newStore returns a fresh, empty store for one
// test and arranges its cleanup.
func Exercise(t *testing.T, newStore func(t *testing.T) Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s Store)
	}{
		{"SecretGetMissing", testSecretGetMissing},
		{"SecretRoundTrip", testSecretRoundTrip},
		{"SecretPutReplace", testSecretPutReplace},
		{"SecretListOrdered", testSecretListOrdered},
		{"SecretDelete", testSecretDelete},
		{"SecretRekeyAllOrNothing", testSecretRekeyAllOrNothing},
		{"AuditEmpty", testAuditEmpty},
		{"AuditAppendAndQuery", testAuditAppendAndQuery},
		{"AuditAppendFailureStoresNothing", testAuditAppendFailure},
		{"AuditConcurrentAppendsChain", testAuditConcurrentAppends},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newStore(t))
		})
	}
}

func record(name string) vault.Record {
	return vault.Record{
		Name:      name,
		Placement: "header:X-Api-Key",
		Hosts:     []string{"a.example.com", "b.example.com"},
		KeyID:     "0011223344556677",
		Sealed:    []byte("sealed:" + name),
		UpdatedAt: time.Unix(1700000000, 123456789).UTC(),
	}
}

func testSecretGetMissing(t *testing.T, s Store) {
	_, err := s.SecretGet(t.Context(), "nope")
	if !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("SecretGet(missing) = %v, want vault.ErrNotFound", err)
	}
}

func testSecretRoundTrip(t *testing.T, s Store) {
	ctx := t.Context()
	want := record("api")
	if err := s.SecretPut(ctx, want, false); err != nil {
		t.Fatal(err)
	}
	got, err := s.SecretGet(ctx, "api")
	if err != nil {
		t.Fatal(err)
	}
	if !equalRecord(got, want) {
		t.Fatalf("SecretGet = %+v, want %+v", got, want)
	}
}

func testSecretPutReplace(t *testing.T, s Store) {
	ctx := t.Context()
	first := record("api")
	if err := s.SecretPut(ctx, first, false); err != nil {
		t.Fatal(err)
	}
	second := record("api")
	second.Sealed = []byte("second")
	second.Hosts = []string{"c.example.com"}
	if err := s.SecretPut(ctx, second, false); !errors.Is(err, vault.ErrExists) {
		t.Fatalf("SecretPut(existing, replace=false) = %v, want vault.ErrExists", err)
	}
	if got, _ := s.SecretGet(ctx, "api"); !equalRecord(got, first) {
		t.Fatalf("a refused put changed the record: %+v", got)
	}
	if err := s.SecretPut(ctx, second, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.SecretGet(ctx, "api"); !equalRecord(got, second) {
		t.Fatalf("after replace: %+v, want %+v", got, second)
	}
}

func testSecretListOrdered(t *testing.T, s Store) {
	ctx := t.Context()
	for _, n := range []string{"c", "a", "b"} {
		if err := s.SecretPut(ctx, record(n), false); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := s.SecretList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range recs {
		names = append(names, r.Name)
	}
	if !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Fatalf("SecretList names = %v, want [a b c]", names)
	}
}

func testSecretDelete(t *testing.T, s Store) {
	ctx := t.Context()
	if err := s.SecretPut(ctx, record("api"), false); err != nil {
		t.Fatal(err)
	}
	if err := s.SecretDelete(ctx, "api"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SecretGet(ctx, "api"); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("after delete: %v, want vault.ErrNotFound", err)
	}
	if err := s.SecretDelete(ctx, "api"); !errors.Is(err, vault.ErrNotFound) {
		t.Fatalf("deleting twice: %v, want vault.ErrNotFound", err)
	}
}

func testSecretRekeyAllOrNothing(t *testing.T, s Store) {
	ctx := t.Context()
	for _, n := range []string{"a", "b", "c"} {
		if err := s.SecretPut(ctx, record(n), false); err != nil {
			t.Fatal(err)
		}
	}
	boom := errors.New("boom")
	err := s.SecretRekey(ctx, func(r vault.Record) (vault.Record, error) {
		if r.Name == "c" {
			return vault.Record{}, boom
		}
		r.KeyID = "new"
		return r, nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("SecretRekey = %v, want the reseal error", err)
	}
	recs, _ := s.SecretList(ctx)
	for _, r := range recs {
		if r.KeyID != "0011223344556677" {
			t.Fatalf("a failed rekey changed %q", r.Name)
		}
	}
	if err := s.SecretRekey(ctx, func(r vault.Record) (vault.Record, error) {
		r.KeyID = "new"
		r.Sealed = append([]byte("re"), r.Sealed...)
		return r, nil
	}); err != nil {
		t.Fatal(err)
	}
	recs, _ = s.SecretList(ctx)
	for _, r := range recs {
		if r.KeyID != "new" || !bytes.HasPrefix(r.Sealed, []byte("resealed:")) {
			t.Fatalf("rekey did not rewrite %q: %+v", r.Name, r)
		}
	}
}

func testAuditEmpty(t *testing.T, s Store) {
	ctx := t.Context()
	heads, err := s.AuditHeads(ctx)
	if err != nil || heads.Head.Seq != 0 || heads.Head.MAC != nil || heads.Mark.Seq != 0 || heads.Mark.MAC != nil {
		t.Fatalf("AuditHeads(empty) = %+v, %v; want two zero Heads", heads, err)
	}
	rows, err := s.AuditRows(ctx, audit.Query{})
	if err != nil || len(rows) != 0 {
		t.Fatalf("AuditRows(empty) = %v, %v", rows, err)
	}
}

// chainNext appends rows chained by a simple hash, standing in for audit.Log.
// It fails if the mark it is given is not the head.
func chainNext(e audit.Entry) func(audit.Heads) (audit.Row, audit.Head, error) {
	return func(hs audit.Heads) (audit.Row, audit.Head, error) {
		h := hs.Head
		if !reflect.DeepEqual(hs.Mark, h) {
			return audit.Row{}, audit.Head{}, fmt.Errorf("the store gave mark %+v with head %+v; every append writes both alike", hs.Mark, h)
		}
		r := audit.Row{Seq: h.Seq + 1, Entry: e}
		r.MAC = link(h.MAC, r.Seq)
		return r, audit.Head{Seq: r.Seq, First: 1, Length: r.Seq, MAC: r.MAC, Seal: append([]byte("seal"), r.MAC...)}, nil
	}
}

func link(prev []byte, seq int64) []byte {
	sum := sha256.Sum256(binary.BigEndian.AppendUint64(append([]byte(nil), prev...), uint64(seq)))
	return sum[:]
}

func testAuditAppendAndQuery(t *testing.T, s Store) {
	ctx := t.Context()
	entries := []audit.Entry{
		{Time: time.Unix(1700000000, 1).UTC(), Action: audit.ActionHTTPCall, Purpose: "p", RunID: "r1", Method: "GET", Host: "h:1", Path: "/a", Status: 200, OK: true, Reason: "completed", Duration: 1500 * time.Microsecond},
		{Time: time.Unix(1700000001, 2).UTC(), Action: audit.ActionHTTPCallCancelled, RunID: "r2", Method: "POST", Host: "h", Path: "/b", Reason: "cancelled"},
		{Time: time.Unix(1700000002, 3).UTC(), Action: audit.ActionHTTPCall, RunID: "r1", Method: "GET", Host: "h", Path: "/c", Status: 500, Reason: "status"},
	}
	for _, e := range entries {
		if err := s.AuditAppend(ctx, chainNext(e)); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := s.AuditRows(ctx, audit.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("got %d rows, want 3", len(rows))
	}
	for i, r := range rows {
		if r.Seq != int64(i+1) || r.Entry != entries[i] {
			t.Fatalf("row %d = %+v, want seq %d and %+v", i, r, i+1, entries[i])
		}
	}
	heads, err := s.AuditHeads(ctx)
	want := audit.Head{Seq: 3, First: 1, Length: 3, MAC: rows[2].MAC, Seal: append([]byte("seal"), rows[2].MAC...)}
	if err != nil || !reflect.DeepEqual(heads, audit.Heads{Head: want, Mark: want}) {
		t.Fatalf("AuditHeads = %+v, %v; want head and mark both %+v", heads, err, want)
	}
	for _, c := range []struct {
		q    audit.Query
		want []int64
	}{
		{audit.Query{RunID: "r1"}, []int64{1, 3}},
		{audit.Query{Action: audit.ActionHTTPCallCancelled}, []int64{2}},
		{audit.Query{RunID: "r1", Action: audit.ActionHTTPCall, AfterSeq: 1}, []int64{3}},
		{audit.Query{Limit: 2}, []int64{1, 2}},
		{audit.Query{AfterSeq: 3}, nil},
		{audit.Query{Newest: true}, []int64{3, 2, 1}},
		{audit.Query{Newest: true, Limit: 2}, []int64{3, 2}},
		{audit.Query{Newest: true, Limit: 2, BeforeSeq: 2}, []int64{1}},
		{audit.Query{RunID: "r1", BeforeSeq: 3}, []int64{1}},
	} {
		rows, err := s.AuditRows(ctx, c.q)
		if err != nil {
			t.Fatal(err)
		}
		var seqs []int64
		for _, r := range rows {
			seqs = append(seqs, r.Seq)
		}
		if !slices.Equal(seqs, c.want) {
			t.Errorf("AuditRows(%+v) = %v, want %v", c.q, seqs, c.want)
		}
	}
}

func testAuditAppendFailure(t *testing.T, s Store) {
	ctx := t.Context()
	boom := errors.New("boom")
	if err := s.AuditAppend(ctx, chainNext(audit.Entry{Action: audit.ActionHTTPCall})); err != nil {
		t.Fatal(err)
	}
	err := s.AuditAppend(ctx, func(audit.Heads) (audit.Row, audit.Head, error) { return audit.Row{}, audit.Head{}, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("AuditAppend = %v, want the callback's error", err)
	}
	if heads, _ := s.AuditHeads(ctx); heads.Head.Seq != 1 || heads.Mark.Seq != 1 {
		t.Fatalf("a failed append moved the head and mark to %+v", heads)
	}
}

func testAuditConcurrentAppends(t *testing.T, s Store) {
	ctx := t.Context()
	const writers, each = 8, 15
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := s.AuditAppend(ctx, chainNext(audit.Entry{Action: audit.ActionHTTPCall, RunID: fmt.Sprint(w), Path: fmt.Sprint(i)})); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rows, err := s.AuditRows(ctx, audit.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != writers*each {
		t.Fatalf("got %d rows, want %d", len(rows), writers*each)
	}
	var prev []byte
	for i, r := range rows {
		if r.Seq != int64(i+1) || !bytes.Equal(r.MAC, link(prev, r.Seq)) {
			t.Fatalf("row %d is not chained to row %d: two appends saw the same head", r.Seq, i)
		}
		prev = r.MAC
	}
}

func equalRecord(a, b vault.Record) bool {
	return a.Name == b.Name && a.Placement == b.Placement && slices.Equal(a.Hosts, b.Hosts) &&
		a.KeyID == b.KeyID && bytes.Equal(a.Sealed, b.Sealed) && a.UpdatedAt.Equal(b.UpdatedAt)
}
