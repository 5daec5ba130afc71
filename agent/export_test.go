package agent

import "time"

// SetSignalWait sets how long the cancelled runs' bookkeeping waits for the
// signals of the cancels under way (signals.go); before the runtime runs.
func SetSignalWait(rt *Runtime, d time.Duration) { rt.watcher.signalWait = d }

// SignalsAwaited reports how many bookkeepings are waiting for the signals
// of the cancels under way.
func SignalsAwaited(rt *Runtime) int {
	w := rt.watcher
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.signals.waiting
}
