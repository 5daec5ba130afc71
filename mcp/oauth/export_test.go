package oauth

import "time"

// Waiters is how many callers wait on the shared token leg of the resource
// res (its canonical URI), for the single-flight tests.
func (t *Transport) Waiters(res string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if f := t.flights[res]; f != nil {
		return f.waiters
	}
	return 0
}

// SetClock makes the Transport's clock now, for the tests of refresh before
// expiry.
func (t *Transport) SetClock(now func() time.Time) { t.now = now }
