package agent

import "context"

type runIDKey struct{}

// WithRunID returns a context that names the run a call is made for, so
// that what the call sends out (an egress audit row, say) can be tied to
// the run. The executor sets it on every model and tool call.
func WithRunID(ctx context.Context, runID string) context.Context {
	return context.WithValue(ctx, runIDKey{}, runID)
}

// RunIDFrom returns the run a call is made for, or "".
func RunIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(runIDKey{}).(string)
	return id
}
