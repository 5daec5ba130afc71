package mcp

import (
	"context"
	"errors"
	"testing"
)

type connCtxKey struct{}

// TestConnScoped: the context has the caller's values and the
// connection's life: the caller's cancel does not end it, the
// connection's does — synchronously for a context derived from it, as
// for a child of the connection's context itself — with the connection's
// cause.
func TestConnScoped(t *testing.T) {
	life, end := context.WithCancelCause(context.Background())
	caller, cancelCaller := context.WithCancel(context.WithValue(context.Background(), connCtxKey{}, "run-1"))
	ctx := connScoped(life, caller)
	child, cancelChild := context.WithCancelCause(ctx)
	defer cancelChild(nil)

	if got := child.Value(connCtxKey{}); got != "run-1" {
		t.Errorf("the caller's value = %v, want run-1", got)
	}
	cancelCaller()
	if ctx.Err() != nil || child.Err() != nil {
		t.Fatalf("the caller's cancel ended the connection-scoped context: %v, %v", ctx.Err(), child.Err())
	}
	end(errConnClosed)
	// No wait: a child registered with the connection's context is
	// cancelled by the same call.
	if !errors.Is(child.Err(), context.Canceled) || context.Cause(child) != errConnClosed {
		t.Fatalf("after the connection closed: err %v, cause %v; want context.Canceled, %v", child.Err(), context.Cause(child), errConnClosed)
	}
	if context.Cause(ctx) != errConnClosed {
		t.Errorf("cause of the scoped context = %v, want %v", context.Cause(ctx), errConnClosed)
	}
}
