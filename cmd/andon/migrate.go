package main

import (
	"context"
	"fmt"
)

func runMigrate(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "migrate", "andon migrate [--db FILE|URL]",
		"Create or bring the database's schema up to date, and say which version\n"+
			"it is at. serve and worker do the same when they start; migrate lets a\n"+
			"deployment do it once, before starting them. It needs no master key.")
	sf := addStoreFlags(fs)
	if code, ok := fs.parseNoArgs(args); !ok {
		return code
	}
	st, err := sf.openStore(ctx)
	if err != nil {
		e.errorf("migrate: %s", sf.explain(err))
		return exitFailure
	}
	defer st.Close()
	v, err := st.SchemaVersion(ctx)
	if err != nil {
		e.errorf("migrate: %v", err)
		return exitFailure
	}
	fmt.Fprintf(e.stdout, "database %s is at schema version %d\n", sf.where(), v)
	return exitOK
}
