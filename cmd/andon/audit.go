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
  andon audit verify [--head H]               check the whole chain
  andon audit head                            check it, then print its head

verify exits 1 and names the first bad row if the log was tampered with:
a row edited, deleted, swapped or added, rows cut off the end, the log
emptied or restarted while its mark remains. What the database alone cannot
show is that it was replaced by an older copy of itself, or emptied of its
rows, head and mark at once: keep the line that audit head prints where the
database's writers cannot reach it, and check against it later with
verify --head LINE (or --head FILE holding it).
Exit codes: 0 success, 1 failure or a broken chain, 2 usage error.`

// runAudit is "andon audit": list, verify and head.
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
	case "head":
		return runAuditHead(ctx, e, args[1:])
	}
	e.errorf("audit: unknown subcommand %q (want list, verify or head)", args[0])
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
	fs := newFlagSet(e, "audit verify", "andon audit verify [--head LINE|FILE] [flags]", auditAbout)
	sf := addStoreFlags(fs)
	keptFlag := fs.String("head", "", "also check the log against a `head` that audit head printed earlier: the line, or a file holding it")
	if code, ok := fs.parseNoArgs(args); !ok {
		return code
	}
	var kept *audit.Head
	if *keptFlag != "" {
		h, err := readKeptHead(*keptFlag)
		if err != nil {
			return fs.usageError("--head: %v", err)
		}
		kept = &h
	}
	sum, ok := verifyAudit(ctx, e, sf, "audit verify", kept)
	if !ok {
		return exitFailure
	}
	fmt.Fprintf(e.stdout, "ok: %d rows verified; head row %d, MAC %s\n", sum.Rows, sum.Head.Seq, shortHex(sum.Head.MAC))
	if kept != nil {
		fmt.Fprintf(e.stdout, "ok: the kept head (row %d) is part of the chain\n", kept.Seq)
	}
	return exitOK
}

// verifyAudit opens the store and verifies its audit log, against kept if
// it is not nil, reporting a failure as one line (false then).
func verifyAudit(ctx context.Context, e *env, sf *storeFlags, name string, kept *audit.Head) (audit.Summary, bool) {
	s := sf.openFor(ctx, e, name, false)
	if s == nil {
		return audit.Summary{}, false
	}
	defer s.close()
	log, err := s.auditLog(ctx)
	if err != nil {
		e.errorf("%s: %s", name, sf.explain(err))
		return audit.Summary{}, false
	}
	var sum audit.Summary
	if kept != nil {
		sum, err = log.VerifyKept(ctx, *kept)
	} else {
		sum, err = log.Verify(ctx)
	}
	if err != nil {
		if errors.Is(err, audit.ErrTampered) {
			e.errorf("%s: FAILED: %v", name, err)
		} else {
			e.errorf("%s: %v", name, err)
		}
		return audit.Summary{}, false
	}
	return sum, true
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
