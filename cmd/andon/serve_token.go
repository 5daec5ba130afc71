package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/token"
)

// defaultTokenFile is where `andon serve` writes the first admin token, and
// where the API commands look for a token when given none: the current
// directory, beside andon.key and andon.db.
const defaultTokenFile = "andon.token"

// bootstrapToken gives a database without any token its first: an admin
// named "local", written to path (mode 0600), so that the operator who
// started serve can use the API at once. A database with tokens — revoked
// ones included — is left alone: revoking every token must not bring one
// back. The token goes only into the file, never to the terminal or a log.
func bootstrapToken(ctx context.Context, e *env, store token.Store, log *audit.Log, path string) error {
	tokens, err := store.TokenList(ctx)
	if err != nil {
		return fmt.Errorf("reading the API tokens: %w", err)
	}
	if len(tokens) > 0 {
		return nil
	}
	secret, t, err := token.New("local", token.RoleAdmin, time.Now())
	if err != nil {
		return err
	}
	// Written before it is stored: a token in the store that nobody holds
	// would stop the next start from making one.
	if err := writeSecretFile(path, secret+"\n"); err != nil {
		return fmt.Errorf("writing the API token: %w", err)
	}
	if err := store.TokenCreate(ctx, t); err != nil {
		return fmt.Errorf("storing the API token: %w", err)
	}
	if _, err := log.Record(ctx, audit.Entry{Action: audit.ActionTokenCreated, Purpose: "serve " + describeToken(t), OK: true,
		Reason: string(audit.ActionTokenCreated)}); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "andon: created the first API token (%s, admin, named local) in %s (mode 0600); the CLI in this directory uses it, and andon token create makes more\n",
		t.ID, path)
	return nil
}

// writeSecretFile writes data to path with mode 0600, replacing any file
// there: a fresh temporary file (created 0600) renamed over it, so that the
// secret is never readable by others, even for a moment.
func writeSecretFile(path, data string) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".andon-token-*")
	if err != nil {
		return err
	}
	_, err = f.WriteString(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
