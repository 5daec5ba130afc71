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
	// overflow marks the one cause that stands for every cause beyond
	// maxDenialCauses.
	overflow bool
}

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
// not a goroutine waiting on one, or at once when [Config].Stop closes; a
// process that ends without closing Stop loses the counts of the intervals
// still open, never a cause's first row.
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
		cause = denialCause{overflow: true}
	}
	if c, ok := d.causes[cause]; ok {
		c.more++
		c.last = e.Time
		d.mu.Unlock()
		return
	}
	c := &denialCount{first: e}
	d.causes[cause] = c
	d.mu.Unlock()
	d.write(ctx, e)
	// The interval starts once the first row is in, so that its summary
	// can never be written before it.
	time.AfterFunc(d.interval, func() { d.end(cause, c) })
}

// end ends the interval of cause that began with c, unless it has ended
// already (Stop): its summary row, if more refusals came.
func (d *denials) end(cause denialCause, c *denialCount) {
	d.mu.Lock()
	if d.causes[cause] != c {
		d.mu.Unlock()
		return
	}
	delete(d.causes, cause)
	d.mu.Unlock()
	d.summarise(cause, c)
}

// endAll ends every interval now: for a server that stops.
func (d *denials) endAll() {
	d.mu.Lock()
	open := d.causes
	d.causes = map[denialCause]*denialCount{}
	d.mu.Unlock()
	for cause, c := range open {
		d.summarise(cause, c)
	}
}

// summarise writes the api_denied_repeated row of an interval that ended,
// if more refusals than the first came in it.
func (d *denials) summarise(cause denialCause, c *denialCount) {
	if c.more == 0 {
		return
	}
	e := c.first
	if cause.overflow {
		e = audit.Entry{Purpose: "api (various)", Reason: "various causes"}
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
