package catalogue

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/andonhq/andon/mcp"
)

// A server's tools change while andon runs: it says so with
// notifications/tools/list_changed, or a call finds a tool gone (the
// server answers unknown tool). Either makes the catalogue import the
// server's tools again, in the background, under the same rules as any
// import: bounded by the server's import budget, and not while the server
// is in its back-off after a failed import (the next listing tries it
// then, as for any server that failed). Notifications are coalesced: one
// re-import at a time per server, and at most one more after it, however
// many notifications arrive meanwhile — a server that floods them costs a
// re-import at a time, no more. What changed (when, and which tools were
// added or removed) is kept for the servers page ([ServerInfo].Change).

// ToolsChange is the last change of a server's tools that a re-import
// found.
type ToolsChange struct {
	At time.Time
	// Why is "list_changed" (the server said so) or "unknown_tool" (a
	// call found a tool gone).
	Why string
	// Added and Removed are the names of the tools, on the server.
	Added, Removed []string
}

// refresh imports the server's tools again, in the background, because of
// why — unless an import failed and its back-off has not passed, or the
// catalogue is closed. A refresh asked for while one runs makes that one
// run once more when it ends.
func (s *server) refresh(why string) {
	if s.cat.closed.Load() || !s.cfg.IsEnabled() {
		return
	}
	s.mu.Lock()
	switch {
	case s.refreshing:
		s.refreshAgain = true
		s.mu.Unlock()
		return
	case time.Now().Before(s.retryAt):
		s.mu.Unlock()
		s.logger.Debug("catalogue: the server's tools changed, but it is in its back-off; the next listing after it imports them", "why", why)
		return
	}
	s.refreshing = true
	s.mu.Unlock()
	started := s.cat.goAside(func() {
		for {
			before := remoteNames(s.imported())
			err := s.reimport(s.cat.importsCtx)
			if err == nil {
				s.noteChange(why, before, remoteNames(s.imported()))
			}
			s.mu.Lock()
			again := s.refreshAgain && !s.cat.closed.Load()
			s.refreshAgain = false
			s.refreshing = again
			s.mu.Unlock()
			if !again {
				return
			}
		}
	})
	if !started {
		s.mu.Lock()
		s.refreshing = false
		s.mu.Unlock()
	}
}

// noteChange records what a re-import changed, if anything.
func (s *server) noteChange(why string, before, after []string) {
	added, removed := diffNames(before, after)
	if len(added) == 0 && len(removed) == 0 {
		s.logger.Info("catalogue: imported tools again; nothing changed", "why", why, "count", len(after))
		return
	}
	s.mu.Lock()
	s.change = &ToolsChange{At: time.Now(), Why: why, Added: added, Removed: removed}
	s.mu.Unlock()
	s.logger.Info("catalogue: the server's tools changed", "why", why, "added", added, "removed", removed)
}

// onListChanged is the client's OnListChanged: a tools list change makes
// the catalogue import them again; next, if set, is told every change.
func (s *server) onListChanged(next func(string)) func(string) {
	return func(list string) {
		if list == "tools" {
			s.refresh("list_changed")
		}
		if next != nil {
			next(list)
		}
	}
}

// unknownTool reports whether err is a server's answer that the tool it
// was asked to call does not exist: invalid params (-32602) saying
// "unknown tool", as the specification's example has it.
func unknownTool(err error) bool {
	var rpc *mcp.RPCError
	return errors.As(err, &rpc) && rpc.Code == mcp.CodeInvalidParams && strings.Contains(strings.ToLower(rpc.Message), "unknown tool")
}

func remoteNames(tools []*Tool) []string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.remote.Name
	}
	return names
}

// diffNames returns the names in after and not in before, and those in
// before and not in after, each sorted.
func diffNames(before, after []string) (added, removed []string) {
	for _, n := range after {
		if !slices.Contains(before, n) {
			added = append(added, n)
		}
	}
	for _, n := range before {
		if !slices.Contains(after, n) {
			removed = append(removed, n)
		}
	}
	slices.Sort(added)
	slices.Sort(removed)
	return added, removed
}
