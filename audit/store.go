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

// Heads is what the store keeps of the chain's end, in two places that
// every append writes in one transaction: the head, and the mark, a copy of
// it in a table of its own. Deleting the rows and the head leaves the mark:
// sealed evidence of how long a chain this key sealed. Either is the zero
// Head if its table holds no row.
type Heads struct {
	Head Head
	Mark Head
}

// Store keeps the rows, the head and the mark. sqlstore implements it.
// Implementations must be safe for concurrent use, by goroutines and by
// processes.
type Store interface {
	// AuditAppend reads the head and the mark, calls next with them, and
	// stores the row that next returns and the head it returns as both
	// the head and the mark, all in one transaction, so that no other
	// append runs between the read and the write. If next fails, nothing
	// is stored and its error is returned.
	AuditAppend(ctx context.Context, next func(Heads) (Row, Head, error)) error
	// AuditRows returns the rows q selects, ordered by Seq (descending
	// if q.Newest).
	AuditRows(ctx context.Context, q Query) ([]Row, error)
	// AuditHeads returns the head and the mark, read together (in one
	// statement), so that an append cannot fall between the two reads.
	AuditHeads(ctx context.Context) (Heads, error)
}
