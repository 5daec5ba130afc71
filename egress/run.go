package egress

import "context"

type runKey struct{}

// WithRun returns a copy of ctx that carries runID. Every audit row written
// for a request made with that context names the run.
func WithRun(ctx context.Context, runID string) context.Context {
	return context.WithValue(ctx, runKey{}, runID)
}

// RunFrom returns the run id [WithRun] put in ctx, or "".
func RunFrom(ctx context.Context) string {
	id, _ := ctx.Value(runKey{}).(string)
	return id
}
