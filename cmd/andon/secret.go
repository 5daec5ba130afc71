package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/vault"
)

const secretAbout = `Manage the secrets andon injects into outgoing requests. Values are
encrypted at rest (AES-256-GCM) under the master key, taken from
ANDON_MASTER_KEY (base64, 32 bytes) or the key file.

  andon secret set NAME --host HOST [--host HOST…] [--placement P]
        store a secret; the value is read from standard input (a prompt
        without echo on a terminal), never from the command line.
        P is bearer (default), basic (value user:password),
        header:NAME or query:NAME.
  andon secret list          names, placements and hosts; never values
  andon secret rm NAME       remove a secret
  andon secret rotate-key    re-seal every secret under a new master key

Exit codes: 0 success, 1 failure (key, store), 2 usage error.`

// runSecret is "andon secret": set, list, rm and rotate-key.
func runSecret(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		e.errorf("secret: missing subcommand")
		fmt.Fprintln(e.stderr, secretAbout)
		return exitUsage
	}
	if isHelp(args[0]) || args[0] == "help" {
		fmt.Fprintln(e.stdout, secretAbout)
		return exitOK
	}
	switch args[0] {
	case "set":
		return runSecretSet(ctx, e, args[1:])
	case "list", "ls":
		return runSecretList(ctx, e, args[1:])
	case "rm", "remove":
		return runSecretRemove(ctx, e, args[1:])
	case "rotate-key":
		return runSecretRotateKey(ctx, e, args[1:])
	}
	e.errorf("secret: unknown subcommand %q (want set, list, rm or rotate-key)", args[0])
	return exitUsage
}

// hostList is a repeatable --host flag.
type hostList []string

func (h *hostList) String() string { return strings.Join(*h, ",") }

func (h *hostList) Set(v string) error {
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*h = append(*h, part)
		}
	}
	return nil
}

func runSecretSet(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "secret set", "andon secret set NAME --host HOST [--placement P] [flags] < value", secretAbout)
	sf := addStoreFlags(fs)
	var hosts hostList
	fs.Var(&hosts, "host", "a `host` the secret may be sent to (repeat, or comma-separate, for more)")
	placementFlag := fs.String("placement", "bearer", "where the secret goes: bearer, basic, header:NAME or query:NAME")
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return fs.usageError("want exactly one NAME (the value is read from standard input, never from the command line)")
	}
	if len(hosts) == 0 {
		return fs.usageError("--host is required: a secret goes only to the hosts named")
	}
	placement, err := vault.ParsePlacement(*placementFlag)
	if err != nil {
		return fs.usageError("--placement: %v", err)
	}
	value, err := readSecretValue(e, pos[0])
	if err != nil {
		e.errorf("secret set: reading the value: %v", err)
		return exitFailure
	}
	defer clear(value)

	s := sf.openFor(ctx, e, "secret set", true)
	if s == nil {
		return exitFailure
	}
	defer s.close()
	if err := s.vault.Set(ctx, pos[0], value, placement, hosts); err != nil {
		e.errorf("secret set: %v", err)
		return exitFailure
	}
	s.record(ctx, e, audit.ActionSecretSet, pos[0])
	fmt.Fprintf(e.stderr, "andon: secret %q stored (%s, for %s)\n", pos[0], placement, strings.Join(hosts, ", "))
	return exitOK
}

// readSecretValue reads the value from a terminal prompt without echo, or
// from standard input up to EOF, without one trailing newline.
func readSecretValue(e *env, name string) ([]byte, error) {
	if f, ok := e.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(e.stderr, "Value for %s (not echoed): ", name)
		v, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(e.stderr)
		return v, err
	}
	v, err := io.ReadAll(io.LimitReader(e.stdin, 1<<20))
	if err != nil {
		return nil, err
	}
	v = bytes.TrimSuffix(v, []byte("\n"))
	v = bytes.TrimSuffix(v, []byte("\r"))
	if len(v) == 0 {
		return nil, errors.New("standard input was empty")
	}
	return v, nil
}

func runSecretList(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "secret list", "andon secret list [flags]", secretAbout)
	sf := addStoreFlags(fs)
	if code, ok := fs.parseNoArgs(args); !ok {
		return code
	}
	s := sf.openFor(ctx, e, "secret list", true)
	if s == nil {
		return exitFailure
	}
	defer s.close()
	infos, err := s.vault.List(ctx)
	if err != nil {
		e.errorf("secret list: %v", err)
		return exitFailure
	}
	for _, in := range infos {
		fmt.Fprintf(e.stdout, "%s\t%s\t%s\n", in.Name, printable(in.Placement.String()), strings.Join(in.Hosts, ","))
	}
	return exitOK
}

func runSecretRemove(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "secret rm", "andon secret rm NAME [flags]", secretAbout)
	sf := addStoreFlags(fs)
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return fs.usageError("want exactly one NAME")
	}
	s := sf.openFor(ctx, e, "secret rm", false)
	if s == nil {
		return exitFailure
	}
	defer s.close()
	if err := s.vault.Remove(ctx, pos[0]); err != nil {
		e.errorf("secret rm: %v", err)
		return exitFailure
	}
	s.record(ctx, e, audit.ActionSecretRemoved, pos[0])
	return exitOK
}

func runSecretRotateKey(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "secret rotate-key", "andon secret rotate-key [flags]", secretAbout)
	sf := addStoreFlags(fs)
	if code, ok := fs.parseNoArgs(args); !ok {
		return code
	}
	s := sf.openFor(ctx, e, "secret rotate-key", true)
	if s == nil {
		return exitFailure
	}
	defer s.close()
	newKey, err := vault.NewKey()
	if err != nil {
		e.errorf("secret rotate-key: %v", err)
		return exitFailure
	}
	// The new key is on disk before any record is sealed with it.
	pending := sf.keyFile + ".new"
	if err := vault.WriteKeyFile(pending, newKey); err != nil {
		e.errorf("secret rotate-key: %v (if a previous rotation was interrupted, see which key opens the database first)", err)
		return exitFailure
	}
	if err := vault.Rotate(ctx, s.store, s.key, newKey); err != nil {
		_ = os.Remove(pending)
		e.errorf("secret rotate-key: %s", sf.explain(err))
		return exitFailure
	}
	s.vault = vault.New(s.store, newKey)
	s.record(ctx, e, audit.ActionKeyRotated, "rotate-key")
	if s.keyFromEnv {
		fmt.Fprintf(e.stderr, "andon: rotated the master key from %s to %s; the new key is in %s: set %s from it (the old key no longer opens %s)\n",
			s.key.ID(), newKey.ID(), pending, vault.EnvMasterKey, sf.where())
		return exitOK
	}
	if err := os.Rename(pending, sf.keyFile); err != nil {
		e.errorf("secret rotate-key: the secrets are sealed with the new key in %s, but it could not replace %s: %v", pending, sf.keyFile, err)
		return exitFailure
	}
	fmt.Fprintf(e.stderr, "andon: rotated the master key from %s to %s (%s)\n", s.key.ID(), newKey.ID(), sf.keyFile)
	return exitOK
}
