package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// Server log messages in a run's timeline. A server may log while it
// handles a tool call (MCP notifications/message); [RecordServerLog] makes
// such a message a step of the run (kind log), so the operator reads it
// with the call. The text is the server's: untrusted, stored and shown as
// text, cut to MaxServerLogText bytes; at most MaxServerLogs messages are
// recorded per run, then one step says that the rest were left out (they
// still reach the process log).

// StepLog is the kind of a step that records a server's log message.
const StepLog StepKind = "log"

// Bounds of the server log messages a run records.
const (
	MaxServerLogs    = 100
	MaxServerLogText = 2 << 10
)

// ServerLog is a log message a server sent during a tool call.
type ServerLog struct {
	Server string
	// Level is the message's MCP (syslog) level: debug, info, notice,
	// warning, error, critical, alert, emergency.
	Level string
	// Logger is the name the server gave its logger, if any.
	Logger string
	// Text is the message, as text.
	Text string
}

// serverLogs counts the log steps of one tool call's run.
type serverLogs struct {
	mu      sync.Mutex
	counted bool // n holds the run's log steps before this call
	n       int
}

// RecordServerLog records m as a step of the run whose tool call ctx is the
// context of, and reports whether it did: not when ctx is no run's tool
// call, when the run has recorded MaxServerLogs messages already, or when
// the step cannot be appended (the run waits for input, or is no longer
// this segment's).
func RecordServerLog(ctx context.Context, m ServerLog) bool {
	a, _ := ctx.Value(askerKey{}).(*asker)
	if a == nil {
		return false
	}
	return a.recordLog(ctx, m)
}

func (a *asker) recordLog(ctx context.Context, m ServerLog) bool {
	s := a.s
	bctx := context.WithoutCancel(ctx)
	l := &a.logs
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.counted {
		steps, err := s.rt.cfg.Store.StepList(bctx, s.run.ID)
		if err != nil {
			s.rt.logger.Warn("agent: counting a run's log steps failed", "run", s.run.ID, "error", err)
			return false
		}
		for _, st := range steps {
			if st.Kind == StepLog {
				l.n++
			}
		}
		l.counted = true
	}
	if l.n > MaxServerLogs {
		return false
	}
	args, _ := json.Marshal(map[string]string{"server": m.Server, "level": m.Level, "logger": m.Logger})
	text := storable(m.Text, MaxServerLogText)
	if l.n == MaxServerLogs {
		text = fmt.Sprintf("The run has recorded %d log messages of its servers; the rest are left out of its steps (they are in the process log).", MaxServerLogs)
	}
	step := &Step{RunID: s.run.ID, Kind: StepLog, Round: a.round, Tool: a.tool, Args: args, Text: text}
	if err := s.rt.cfg.Store.StepAppend(bctx, s.owner, step); err != nil {
		if !errors.Is(err, ErrLeaseLost) {
			s.rt.logger.Warn("agent: recording a server's log message failed", "run", s.run.ID, "error", err)
		}
		return false
	}
	l.n++
	return l.n <= MaxServerLogs
}
