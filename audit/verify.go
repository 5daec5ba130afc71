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
	// Head is the chain's end. Keep its MAC somewhere else to detect later
	// that the whole store was rolled back to an older copy.
	Head Head
}

// verifyPage is how many rows Verify reads at a time.
const verifyPage = 1000

// Verify walks the whole chain in order. It returns a [*TamperError] (which
// matches [ErrTampered]) naming the first row that was edited, deleted,
// swapped or added outside the log, or an ordinary error if the store could
// not be read.
func (l *Log) Verify(ctx context.Context) (Summary, error) {
	var prev Row
	for {
		rows, err := l.store.AuditRows(ctx, Query{AfterSeq: prev.Seq, Limit: verifyPage})
		if err != nil {
			return Summary{}, fmt.Errorf("audit: reading rows: %w", err)
		}
		for _, r := range rows {
			if r.Seq != prev.Seq+1 {
				return Summary{}, &TamperError{Seq: prev.Seq + 1, Problem: fmt.Sprintf("missing: the chain jumps from row %d to row %d (a row was deleted)", prev.Seq, r.Seq)}
			}
			if !hmac.Equal(r.MAC, rowMAC(l.key, r, prev.MAC)) {
				problem := "MAC does not match: the row was edited, swapped or moved"
				if r.Seq == 1 {
					problem += " (or the log's key is not the one it was written with)"
				}
				return Summary{}, &TamperError{Seq: r.Seq, Problem: problem}
			}
			prev = r
		}
		if len(rows) < verifyPage {
			break
		}
	}
	head, err := l.store.AuditHead(ctx)
	if err != nil {
		return Summary{}, fmt.Errorf("audit: reading the head: %w", err)
	}
	if head.Seq == 0 && prev.Seq == 0 {
		return Summary{}, nil
	}
	if !hmac.Equal(head.Seal, headSeal(l.key, head.Seq, head.MAC)) {
		return Summary{}, &TamperError{Seq: head.Seq, Problem: "the head's seal does not match: the head was edited (or the key is wrong)"}
	}
	switch {
	case head.Seq > prev.Seq:
		return Summary{}, &TamperError{Seq: prev.Seq + 1, Problem: fmt.Sprintf("missing: the log ends at row %d but its head says %d (rows were cut off the end)", prev.Seq, head.Seq)}
	case head.Seq < prev.Seq:
		return Summary{}, &TamperError{Seq: head.Seq + 1, Problem: fmt.Sprintf("not covered by the head, which ends at row %d (rows were added outside the log)", head.Seq)}
	case !hmac.Equal(head.MAC, prev.MAC):
		return Summary{}, &TamperError{Seq: head.Seq, Problem: "the head's MAC is not the last row's MAC"}
	}
	return Summary{Rows: prev.Seq, Head: head}, nil
}
