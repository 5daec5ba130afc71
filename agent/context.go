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

type callRefKey struct{}

// WithCall returns a context that names the tool call it is made for, so
// that what records the call (its audit row, say) can name it as an
// approval does. The executor sets it on every tool call.
func WithCall(ctx context.Context, ref CallRef) context.Context {
	return context.WithValue(ctx, callRefKey{}, ref)
}

// CallFrom returns the tool call ctx names, if it names one.
func CallFrom(ctx context.Context) (CallRef, bool) {
	ref, ok := ctx.Value(callRefKey{}).(CallRef)
	return ref, ok
}

// DescribeCall is the form in which audit rows name a tool call: "TOOL
// step=N call=M args=sha256:…", never its arguments.
func DescribeCall(r CallRef) string { return describeRef(r) }
