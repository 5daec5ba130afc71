package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/andonhq/andon/audit"
)

const auditAbout = `Read andon's audit log: one row per outbound call (and per change to the
secrets), chained with HMAC-SHA256 so that editing, deleting or reordering a
row is detected.

  andon audit list [--run ID] [--action A]   print rows, oldest first
  andon audit verify                          check the whole chain

verify exits 1 and names the first bad row if the log was tampered with.
Exit codes: 0 success, 1 failure or a broken chain, 2 usage error.`

// runAudit is "andon audit": list and verify.
func runAudit(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		e.errorf("audit: missing subcommand")
		fmt.Fprintln(e.stderr, auditAbout)
		return exitUsage
	}
	if isHelp(args[0]) || args[0] == "help" {
		fmt.Fprintln(e.stdout, auditAbout)
		return exitOK
	}
	switch args[0] {
	case "list", "ls":
		return runAuditList(ctx, e, args[1:])
	case "verify":
		return runAuditVerify(ctx, e, args[1:])
	}
	e.errorf("audit: unknown subcommand %q (want list or verify)", args[0])
	return exitUsage
}

func runAuditList(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "audit list", "andon audit list [--run ID] [--action A] [flags]", auditAbout)
	sf := addStoreFlags(fs)
	run := fs.String("run", "", "only the rows of run `ID`")
	action := fs.String("action", "", "only the rows of `action` (http_call, http_call_cancelled, http_call_cancelled_before_send, …)")
	if code, ok := fs.parseNoArgs(args); !ok {
		return code
	}
	s := sf.openFor(ctx, e, "audit list", false)
	if s == nil {
		return exitFailure
	}
	defer s.close()
	rows, err := s.store.AuditRows(ctx, audit.Query{RunID: *run, Action: audit.Action(*action)})
	if err != nil {
		e.errorf("audit list: %v", err)
		return exitFailure
	}
	w := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "SEQ\tTIME\tACTION\tOK\tSTATUS\tMETHOD\tHOST\tPATH\tRUN\tPURPOSE\tDURATION\tREASON")
	for _, r := range rows {
		fmt.Fprintf(w, "%d\t%s\t%s\t%v\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			r.Seq, r.Time.Format(time.RFC3339Nano), printable(string(r.Action)), r.OK, r.Status,
			orDash(r.Method), orDash(r.Host), orDash(r.Path), orDash(r.RunID), orDash(r.Purpose),
			r.Duration.Round(time.Microsecond), printable(r.Reason))
	}
	if err := w.Flush(); err != nil {
		e.errorf("audit list: %v", err)
		return exitFailure
	}
	return exitOK
}

func orDash(s string) string {
	if s = printable(s); s == "" {
		return "-"
	}
	return s
}

func runAuditVerify(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "audit verify", "andon audit verify [flags]", auditAbout)
	sf := addStoreFlags(fs)
	if code, ok := fs.parseNoArgs(args); !ok {
		return code
	}
	s := sf.openFor(ctx, e, "audit verify", false)
	if s == nil {
		return exitFailure
	}
	defer s.close()
	log, err := s.auditLog(ctx)
	if err != nil {
		e.errorf("audit verify: %s", sf.explain(err))
		return exitFailure
	}
	sum, err := log.Verify(ctx)
	if err != nil {
		if errors.Is(err, audit.ErrTampered) {
			e.errorf("audit verify: FAILED: %v", err)
		} else {
			e.errorf("audit verify: %v", err)
		}
		return exitFailure
	}
	fmt.Fprintf(e.stdout, "ok: %d rows verified; head row %d, MAC %s\n", sum.Rows, sum.Head.Seq, shortHex(sum.Head.MAC))
	return exitOK
}

func shortHex(b []byte) string {
	h := hex.EncodeToString(b)
	if len(h) > 16 {
		h = h[:16]
	}
	if h == "" {
		return "-"
	}
	return h
}
