package sqlstore

import "time"

// ListenHealthInterval sets how long a listener waits in silence before it
// pings its connection.
func ListenHealthInterval(d time.Duration) ListenOption {
	return func(c *listenConfig) { c.health = d }
}
