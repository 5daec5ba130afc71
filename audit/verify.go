package audit

import (
	"context"
	"crypto/hmac"
	"errors"
	"fmt"
)

// ErrTampered is matched by every [TamperError].
var ErrTampered = errors.New("audit: log tampered with")

// TamperError names the first row at which [Log.Verify] found the chain
// broken.
type TamperError struct {
	// Seq is the sequence number of the first bad or missing row; for a
	// bad head it is the head's sequence number.
	Seq int64
	// Problem says what is wrong, in a few words.
	Problem string
}

// Error names the row and the problem.
func (e *TamperError) Error() string {
	return fmt.Sprintf("audit: row %d: %s", e.Seq, e.Problem)
}

// Is matches [ErrTampered].
func (e *TamperError) Is(target error) bool { return target == ErrTampered }

// Summary describes a log that verified.
type Summary struct {
	// Rows is the number of rows.
	Rows int64
	// Head is the chain's end. Keep it (its text form, "andon audit head")
	// somewhere else to detect later what the store alone cannot show: that
	// it was replaced by an older copy of itself, or emptied and restarted
	// (see [Log.VerifyKept]).
	Head Head
}

// verifyPage is how many rows Verify reads at a time.
const verifyPage = 1000

// Verify walks the whole chain in order and checks it against the head and
// the mark. It returns a [*TamperError] (which matches [ErrTampered]) naming
// the first row that was edited, deleted, swapped or added outside the log,
// or the head or mark that does not fit the chain (an emptied log whose mark
// remains, a chain shorter than the one the key sealed), or an ordinary
// error if the store could not be read.
//
// It checks the log as it was when it read the head and the mark, so rows
// appended while it runs are neither checked nor mistaken for tampering.
//
// A log whose rows, head and mark were all deleted reads as a log that
// never held a row, and a store replaced by an older copy of itself as that
// copy: only a head kept elsewhere tells ([Log.VerifyKept]).
func (l *Log) Verify(ctx context.Context) (Summary, error) {
	h, err := l.store.AuditHeads(ctx)
	if err != nil {
		return Summary{}, fmt.Errorf("audit: reading the head: %w", err)
	}
	end := max(h.Head.Seq, h.Mark.Seq)
	last, err := l.walk(ctx, end)
	if err != nil {
		return Summary{}, err
	}
	if err := l.nothingPast(ctx, end); err != nil {
		return Summary{}, err
	}
	head, mark := h.Head, h.Mark
	if head.Seq == 0 && mark.Seq == 0 {
		return Summary{}, nil
	}
	if head.Seq != 0 && !sealed(l.key, head) {
		return Summary{}, &TamperError{Seq: head.Seq, Problem: "the head's seal does not match: the head was edited (or the key is wrong)"}
	}
	if mark.Seq != 0 && !sealed(l.key, mark) {
		return Summary{}, &TamperError{Seq: mark.Seq, Problem: "the mark's seal does not match: the mark was edited, or sealed with another key (was the vault's key root replaced?)"}
	}
	if head.Seq == 0 {
		if last.Seq == 0 {
			return Summary{}, &TamperError{Seq: 1, Problem: fmt.Sprintf("missing: the log is empty, but its mark says this key sealed a chain of %d rows (the rows and the head were deleted)", mark.Seq)}
		}
		return Summary{}, &TamperError{Seq: mark.Seq, Problem: fmt.Sprintf("the head is missing (deleted); the mark says the chain ends at row %d", mark.Seq)}
	}
	switch {
	case head.Seq > last.Seq:
		return Summary{}, &TamperError{Seq: last.Seq + 1, Problem: fmt.Sprintf("missing: the log ends at row %d but its head says %d (rows were cut off the end)", last.Seq, head.Seq)}
	case head.Seq < last.Seq:
		return Summary{}, &TamperError{Seq: head.Seq + 1, Problem: fmt.Sprintf("not covered by the head, which ends at row %d (the head was moved back, or rows were added outside the log)", head.Seq)}
	case !hmac.Equal(head.MAC, last.MAC):
		return Summary{}, &TamperError{Seq: head.Seq, Problem: "the head's MAC is not the last row's MAC"}
	case head.First > 1, head.First == 1 && head.Length != head.Seq:
		return Summary{}, &TamperError{Seq: head.Seq, Problem: fmt.Sprintf("the head says the chain holds rows %d to %d (%d rows), but it holds rows 1 to %d", head.First, head.Seq, head.Length, last.Seq)}
	}
	switch {
	case mark.Seq == 0 && head.First != 0:
		return Summary{}, &TamperError{Seq: head.Seq, Problem: "the mark is missing (deleted): every append writes it with the head"}
	case mark.Seq == 0:
		// A head sealed before marks existed (a database older than
		// schema version 7); the next append writes both.
	case mark.Seq > head.Seq:
		return Summary{}, &TamperError{Seq: head.Seq + 1, Problem: fmt.Sprintf("missing: the chain ends at row %d, but its mark says this key sealed a chain of %d rows (the log was rolled back, or restarted after its rows and head were deleted)", head.Seq, mark.Seq)}
	case mark.Seq < head.Seq:
		return Summary{}, &TamperError{Seq: mark.Seq + 1, Problem: fmt.Sprintf("the mark ends at row %d, behind the head at row %d: the mark was moved back", mark.Seq, head.Seq)}
	case !hmac.Equal(mark.MAC, head.MAC) || mark.First != head.First:
		return Summary{}, &TamperError{Seq: head.Seq, Problem: fmt.Sprintf("row %d is not the row %d that the mark says this key sealed: the chain restarted under the same key", head.Seq, mark.Seq)}
	}
	return Summary{Rows: last.Seq, Head: head}, nil
}

// walk checks the rows up to end in order, each chained to the one before,
// and returns the last.
func (l *Log) walk(ctx context.Context, end int64) (Row, error) {
	var prev Row
	for prev.Seq < end {
		rows, err := l.store.AuditRows(ctx, Query{AfterSeq: prev.Seq, BeforeSeq: end + 1, Limit: verifyPage})
		if err != nil {
			return Row{}, fmt.Errorf("audit: reading rows: %w", err)
		}
		for _, r := range rows {
			switch {
			case r.Seq != prev.Seq+1 && prev.Seq == 0:
				return Row{}, &TamperError{Seq: 1, Problem: fmt.Sprintf("missing: the log begins at row %d (rows 1 to %d were deleted)", r.Seq, r.Seq-1)}
			case r.Seq != prev.Seq+1:
				return Row{}, &TamperError{Seq: prev.Seq + 1, Problem: fmt.Sprintf("missing: the chain jumps from row %d to row %d (a row was deleted)", prev.Seq, r.Seq)}
			}
			if !hmac.Equal(r.MAC, rowMAC(l.key, r, prev.MAC)) {
				problem := "MAC does not match: the row was edited, swapped or moved"
				if r.Seq == 1 {
					problem += " (or the log's key is not the one it was written with)"
				}
				return Row{}, &TamperError{Seq: r.Seq, Problem: problem}
			}
			prev = r
		}
		if len(rows) < verifyPage {
			break
		}
	}
	return prev, nil
}

// nothingPast checks that no row lies past end, the chain's end when the
// heads were read, that a head does not cover now: an append writes its row
// and a head covering it in one transaction, so a row that no head covers
// was added outside the log.
func (l *Log) nothingPast(ctx context.Context, end int64) error {
	rows, err := l.store.AuditRows(ctx, Query{AfterSeq: end, Limit: 1})
	if err != nil {
		return fmt.Errorf("audit: reading rows: %w", err)
	}
	if len(rows) == 0 {
		return nil
	}
	h, err := l.store.AuditHeads(ctx)
	if err != nil {
		return fmt.Errorf("audit: reading the head: %w", err)
	}
	if max(h.Head.Seq, h.Mark.Seq) < rows[0].Seq {
		return &TamperError{Seq: rows[0].Seq, Problem: fmt.Sprintf("not covered by the head, which ends at row %d (rows were added outside the log)", end)}
	}
	return nil
}

// VerifyKept verifies the log as [Log.Verify] does, and then against kept,
// a head exported earlier ("andon audit head") and kept outside the store:
// kept must be sealed with this log's key, and the log must still hold the
// row kept names, with the MAC kept records. That catches what nothing
// inside the store can: the store replaced by an older copy of itself, its
// key root replaced, or its rows, head and mark all deleted and a new chain
// begun under the same key.
func (l *Log) VerifyKept(ctx context.Context, kept Head) (Summary, error) {
	if kept.Seq <= 0 || !sealed(l.key, kept) {
		return Summary{}, &TamperError{Seq: kept.Seq, Problem: "the kept head's seal does not match this log's key: the vault's key root was replaced (or the head was kept from another database, or edited)"}
	}
	sum, err := l.Verify(ctx)
	if err != nil {
		return Summary{}, err
	}
	if kept.Seq > sum.Head.Seq {
		return Summary{}, &TamperError{Seq: sum.Head.Seq + 1, Problem: fmt.Sprintf("missing: the log ends at row %d, but the kept head says this key sealed row %d (the store was rolled back to an older copy, or emptied and restarted)", sum.Head.Seq, kept.Seq)}
	}
	rows, err := l.store.AuditRows(ctx, Query{AfterSeq: kept.Seq - 1, Limit: 1})
	if err != nil {
		return Summary{}, fmt.Errorf("audit: reading rows: %w", err)
	}
	if len(rows) == 0 || rows[0].Seq != kept.Seq || !hmac.Equal(rows[0].MAC, kept.MAC) || kept.First > 1 {
		return Summary{}, &TamperError{Seq: kept.Seq, Problem: "not the row the kept head sealed: the chain was replaced by another under the same key (emptied and restarted)"}
	}
	return sum, nil
}
