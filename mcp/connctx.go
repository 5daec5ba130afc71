package mcp

import "context"

// connScoped returns a context that lives as long as life (a connection's
// context: its Done, Err, Deadline and cause) and carries the values of
// values (a caller's context, whose cancellation it does not see).
//
// It is context.WithoutCancel(values) made a child of life, without the
// callback that joining the two took (context.AfterFunc, a closure, a
// cancel context of its own: five allocations per request). Looking a key
// up in life first is what makes it a real child: the context package
// finds life's cancel context through Value, so a context derived from
// this one registers with life directly (no goroutine, no callback) and
// context.Cause reads life's cause; life itself, made from Background,
// holds no other values, and the caller's own cancel context is hidden as
// WithoutCancel hides it.
func connScoped(life, values context.Context) context.Context {
	return &scopedCtx{Context: life, values: values}
}

type scopedCtx struct {
	context.Context // the connection's
	values          context.Context
}

func (c *scopedCtx) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.values.Value(key)
}
