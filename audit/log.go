package audit

import (
	"context"
	"fmt"
	"time"
)

// MinKeySize is the shortest MAC key [New] accepts.
const MinKeySize = 32

// Log appends to and verifies a hash-chained audit log. It is safe for
// concurrent use; the [Store] serialises appends.
type Log struct {
	store Store
	key   []byte
	now   func() time.Time
}

// New returns a log over store whose rows are chained with key, which must
// be at least [MinKeySize] bytes and must not be the master key itself
// (derive one: vault.Vault.DeriveKey). New copies key. It panics on a short
// key, a programming error.
func New(store Store, key []byte) *Log {
	if len(key) < MinKeySize {
		panic(fmt.Sprintf("audit: New with a %d-byte key; want at least %d", len(key), MinKeySize))
	}
	return &Log{store: store, key: append([]byte(nil), key...), now: time.Now}
}

// Record appends e as the next row and returns it. A zero e.Time means now.
// Anything after '?' or '#' in e.Path is dropped.
func (l *Log) Record(ctx context.Context, e Entry) (Row, error) {
	if e.Time.IsZero() {
		e.Time = l.now()
	}
	e.Time = time.Unix(0, e.Time.UnixNano()).UTC()
	e.Path = cleanPath(e.Path)
	var row Row
	err := l.store.AuditAppend(ctx, func(h Heads) (Row, Head, error) {
		var head Head
		row, head = l.next(h, e)
		return row, head, nil
	})
	if err != nil {
		return Row{}, fmt.Errorf("audit: appending %s row: %w", e.Action, err)
	}
	return row, nil
}

// next returns e as the row that follows the chain's end, and the head
// after it. The end is the head, or the mark if the mark is further on: the
// head was deleted or moved back. Numbering on from the mark means that no
// sequence number is ever sealed twice under one key, so [Log.Verify] names
// the rows that went missing instead of finding a shorter chain that
// restarted at 1.
func (l *Log) next(h Heads, e Entry) (Row, Head) {
	end := h.Head
	if h.Mark.Seq > end.Seq {
		end = h.Mark
	}
	row := Row{Seq: end.Seq + 1, Entry: e}
	row.MAC = rowMAC(l.key, row, end.MAC)
	first := end.First
	switch {
	case end.Seq == 0:
		first = row.Seq
	case first == 0:
		first = 1 // a head sealed before heads recorded it: chains began at 1
	}
	head := Head{Seq: row.Seq, First: first, Length: row.Seq - first + 1, MAC: row.MAC}
	head.Seal = headSeal(l.key, head)
	return row, head
}

// List returns the rows q selects, ordered by sequence number.
func (l *Log) List(ctx context.Context, q Query) ([]Row, error) {
	rows, err := l.store.AuditRows(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("audit: listing rows: %w", err)
	}
	return rows, nil
}
