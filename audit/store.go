package audit

import "context"

// Query selects rows. Its zero value selects every row.
type Query struct {
	// RunID, if not empty, selects the rows of one run.
	RunID string
	// Action, if not empty, selects the rows of one action.
	Action Action
	// AfterSeq selects rows whose Seq is greater. Zero starts at the
	// beginning.
	AfterSeq int64
	// BeforeSeq, if not zero, selects rows whose Seq is less.
	BeforeSeq int64
	// Newest orders the rows newest first, so that with Limit they are
	// the newest ones: a page of a log read backwards (the next page's
	// BeforeSeq is the last row's Seq).
	Newest bool
	// Limit caps the number of rows returned. Zero means no limit.
	Limit int
}

// Store keeps the rows and the head. sqlstore implements it. Implementations
// must be safe for concurrent use, by goroutines and by processes.
type Store interface {
	// AuditAppend reads the head, calls next with it, and stores the row
	// and new head that next returns, all in one transaction, so that no
	// other append runs between the read and the write. If next fails,
	// nothing is stored and its error is returned.
	AuditAppend(ctx context.Context, next func(head Head) (Row, Head, error)) error
	// AuditRows returns the rows q selects, ordered by Seq (descending
	// if q.Newest).
	AuditRows(ctx context.Context, q Query) ([]Row, error)
	// AuditHead returns the head; the zero Head for an empty log.
	AuditHead(ctx context.Context) (Head, error)
}
