package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/andonhq/andon/audit"
)

const auditAbout = `Read andon's audit log: one row per outbound call (and per change to the
secrets or the tokens, and per cause of refused API requests), chained with
HMAC-SHA256 so that editing, deleting or reordering a row is detected.

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
	w := bufio.NewWriter(e.stdout)
	if err := listAuditRows(ctx, w, s.store, audit.Query{RunID: *run, Action: audit.Action(*action)}); err != nil {
		e.errorf("audit list: %v", err)
		return exitFailure
	}
	if err := w.Flush(); err != nil {
		e.errorf("audit list: %v", err)
		return exitFailure
	}
	return exitOK
}

// auditListPage is how many rows audit list reads from the store at once.
const auditListPage = 500

// listAuditRows writes the rows q selects to w, oldest first, a page at a
// time, each row as it comes: memory and output stay proportional to the
// rows, never to the widest cell of the log (a column padded to its widest
// cell once made 9.7k rows 9.4 GB). The columns of fixed vocabulary are
// aligned; the free ones (host, path, run, purpose, duration, reason)
// follow, two spaces apart, unpadded.
func listAuditRows(ctx context.Context, w io.Writer, store audit.Store, q audit.Query) error {
	fmt.Fprintf(w, auditRowFormat, "SEQ", "TIME", "ACTION", "OK", "STATUS", "METHOD", "HOST", "PATH", "RUN", "PURPOSE", "DURATION", "REASON")
	q.Limit = auditListPage
	for {
		rows, err := store.AuditRows(ctx, q)
		if err != nil {
			return err
		}
		for _, r := range rows {
			_, err := fmt.Fprintf(w, auditRowFormat, strconv.FormatInt(r.Seq, 10), r.Time.UTC().Format(auditTimeLayout),
				printable(string(r.Action)), strconv.FormatBool(r.OK), strconv.Itoa(r.Status), orDash(r.Method),
				orDash(r.Host), orDash(r.Path), orDash(r.RunID), orDash(r.Purpose),
				r.Duration.Round(time.Microsecond).String(), orDash(r.Reason))
			if err != nil {
				return err
			}
		}
		if len(rows) < q.Limit {
			return nil
		}
		q.AfterSeq = rows[len(rows)-1].Seq
	}
}

// auditRowFormat is one line of audit list: the widths of the aligned
// columns are those of their longest values (an action name, a method).
const auditRowFormat = "%6s  %-27s  %-31s  %-5s  %-6s  %-7s  %s  %s  %s  %s  %s  %s\n"

// auditTimeLayout has a fixed width, so that the columns after it align.
const auditTimeLayout = "2006-01-02T15:04:05.000000Z"

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
