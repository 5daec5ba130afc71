package api

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/andonhq/andon/audit"
)

// DefaultDenialInterval is how long the refusals of one cause share one
// api_denied row (see [Config].DenialInterval).
const DefaultDenialInterval = time.Minute

const (
	// maxDeniedPath caps the path an api_denied row keeps: a client
	// chooses the path, and must not choose the size of a permanent row.
	maxDeniedPath = 256
	// maxDenialCauses caps the causes coalesced at once. A cause beyond
	// it is counted with every other one beyond it, under one overflow
	// cause, so that memory and rows stay bounded whatever a client
	// varies.
	maxDenialCauses = 256
	// denialWriteTimeout bounds writing a summary row, which no request
	// waits for.
	denialWriteTimeout = 10 * time.Second
)

// denialCause is what makes two refusals "the same": who (a token's id,
// the local actor, or nobody), the route, the status and the reason — and,
// for a refusal of a known principal, the run. Never the source address:
// the API serves loopback, where a local process picks any of 2^24
// sources, and a key it can vary at will bounds nothing.
type denialCause struct {
	who     string
	pattern string
	status  int
	reason  string
	run     string
}

// overflowCause stands for every cause beyond maxDenialCauses.
var overflowCause = denialCause{reason: "various causes"}

// denialCount is a cause being coalesced: its first row, already written,
// and the refusals counted since.
type denialCount struct {
	first audit.Entry
	more  int
	last  time.Time
}

// denials records refused requests, coalesced: the first refusal of a
// cause is written at once, as an api_denied row; the cause's further
// refusals within the interval that starts there are only counted, and
// written as one api_denied_repeated row when it ends. A cause thus costs
// at most two rows per interval, and a flood of any size from one cause
// costs two rows — while every refusal is still accounted for in the log
// (the first row plus the summary's count) and in andon_api_denied_total.
//
// Rows are hash-chained and append-only, so a row cannot be updated with a
// count later: the summary is a row of its own. It is written by a timer,
// not a goroutine waiting on one; a process that stops within an interval
// loses that interval's count, never a cause's first row.
type denials struct {
	audit    AuditLog // nil: the refusals go to the log instead
	logger   *slog.Logger
	now      func() time.Time
	interval time.Duration

	mu     sync.Mutex
	causes map[denialCause]*denialCount
}

func newDenials(cfg *Config) *denials {
	return &denials{audit: cfg.Audit, logger: cfg.Logger, now: cfg.Now, interval: cfg.DenialInterval,
		causes: map[denialCause]*denialCount{}}
}

// record accounts for one refusal of cause, described by e.
func (d *denials) record(ctx context.Context, cause denialCause, e audit.Entry) {
	e.Time = d.now()
	d.mu.Lock()
	if _, ok := d.causes[cause]; !ok && len(d.causes) >= maxDenialCauses {
		cause = overflowCause
	}
	if c, ok := d.causes[cause]; ok {
		c.more++
		c.last = e.Time
		d.mu.Unlock()
		return
	}
	d.causes[cause] = &denialCount{first: e}
	d.mu.Unlock()
	d.write(ctx, e)
	// The interval starts once the first row is in, so that its summary
	// can never be written before it.
	time.AfterFunc(d.interval, func() { d.end(cause) })
}

// end ends cause's interval: its summary row, if more refusals came.
func (d *denials) end(cause denialCause) {
	d.mu.Lock()
	c := d.causes[cause]
	delete(d.causes, cause)
	d.mu.Unlock()
	if c == nil || c.more == 0 {
		return
	}
	e := c.first
	if cause == overflowCause {
		e = audit.Entry{Purpose: "api (various)", Reason: overflowCause.reason}
	}
	e.Action, e.Time = audit.ActionAPIDeniedRepeated, time.Time{}
	e.Reason = fmt.Sprintf("%s (%d more)", e.Reason, c.more)
	e.Duration = c.last.Sub(c.first.Time)
	ctx, cancel := context.WithTimeout(context.Background(), denialWriteTimeout)
	defer cancel()
	d.write(ctx, e)
}

func (d *denials) write(ctx context.Context, e audit.Entry) {
	if d.audit == nil {
		d.logger.Warn("api: request denied", "action", e.Action, "who", e.Purpose, "method", e.Method, "path", e.Path, "reason", e.Reason)
		return
	}
	if _, err := d.audit.Record(context.WithoutCancel(ctx), e); err != nil {
		d.logger.Warn("api: recording a denied request failed", "error", err)
	}
}
