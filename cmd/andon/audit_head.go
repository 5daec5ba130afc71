package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/andonhq/andon/audit"
)

// runAuditHead is "andon audit head": verify the log, then print its head
// as one line for the operator to keep outside the database.
func runAuditHead(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "audit head", "andon audit head [flags]", auditAbout)
	sf := addStoreFlags(fs)
	if code, ok := fs.parseNoArgs(args); !ok {
		return code
	}
	sum, ok := verifyAudit(ctx, e, sf, "audit head", nil)
	if !ok {
		return exitFailure
	}
	if sum.Head.Seq == 0 {
		e.errorf("audit head: the audit log is empty: there is no head to keep yet")
		return exitFailure
	}
	line, err := sum.Head.MarshalText()
	if err != nil {
		e.errorf("audit head: %v", err)
		return exitFailure
	}
	fmt.Fprintf(e.stdout, "%s\n", line)
	return exitOK
}

// readKeptHead reads a head that audit head printed: v itself, or the file
// v names.
func readKeptHead(v string) (audit.Head, error) {
	var h audit.Head
	err := h.UnmarshalText([]byte(v))
	if err == nil || !errors.Is(err, audit.ErrMalformedHead) {
		return h, err
	}
	b, ferr := os.ReadFile(v)
	if ferr != nil {
		return audit.Head{}, fmt.Errorf("neither a head (%w) nor a readable file (%w)", err, ferr)
	}
	if err := h.UnmarshalText(b); err != nil {
		return audit.Head{}, fmt.Errorf("%s: %w", v, err)
	}
	return h, nil
}
