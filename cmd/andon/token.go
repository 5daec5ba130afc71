package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/token"
)

const tokenAbout = `Manage the API tokens of andon serve. A token acts as its name (the owner
of the runs it starts) with a role: viewer reads; operator also starts runs
and cancels, approves or denies its own; admin does anything to any run.
The database keeps only a hash of each token: a token is shown once.

  andon token create --name NAME --role admin|operator|viewer
        make a token and print it (only it) on standard output
  andon token list           ids, names, roles, use; never a token
  andon token revoke ID      revoke a token at once

Exit codes: 0 success, 1 failure, 2 usage error.`

// runToken is "andon token": create, list and revoke.
func runToken(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		e.errorf("token: missing subcommand")
		fmt.Fprintln(e.stderr, tokenAbout)
		return exitUsage
	}
	if isHelp(args[0]) || args[0] == "help" {
		fmt.Fprintln(e.stdout, tokenAbout)
		return exitOK
	}
	switch args[0] {
	case "create":
		return runTokenCreate(ctx, e, args[1:])
	case "list", "ls":
		return runTokenList(ctx, e, args[1:])
	case "revoke":
		return runTokenRevoke(ctx, e, args[1:])
	}
	e.errorf("token: unknown subcommand %q (want create, list or revoke)", args[0])
	return exitUsage
}

func runTokenCreate(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "token create", "andon token create --name NAME --role ROLE [flags]", tokenAbout)
	sf := addStoreFlags(fs)
	name := fs.String("name", "", "who the token acts as: the owner of the runs it starts (required)")
	roleFlag := fs.String("role", "", "admin, operator or viewer (required)")
	if code, ok := fs.parseNoArgs(args); !ok {
		return code
	}
	if *name == "" || *roleFlag == "" {
		return fs.usageError("--name and --role are required")
	}
	role, err := token.ParseRole(*roleFlag)
	if err != nil {
		return fs.usageError("--role %q: want admin, operator or viewer", *roleFlag)
	}
	secret, t, err := token.New(*name, role, time.Now())
	if err != nil {
		return fs.usageError("--name: %v", err)
	}
	s := sf.openFor(ctx, e, "token create", true)
	if s == nil {
		return exitFailure
	}
	defer s.close()
	if err := s.store.TokenCreate(ctx, t); err != nil {
		e.errorf("token create: %s", sf.explain(err))
		return exitFailure
	}
	s.record(ctx, e, audit.ActionTokenCreated, describeToken(t))
	fmt.Fprintln(e.stdout, secret)
	fmt.Fprintf(e.stderr, "andon: token %s created for %s (%s); it is shown once, above: keep it (for the CLI: %s, or the file %s)\n",
		t.ID, t.Name, t.Role, envToken, defaultTokenFile)
	return exitOK
}

func runTokenList(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "token list", "andon token list [flags]", tokenAbout)
	sf := addStoreFlags(fs)
	if code, ok := fs.parseNoArgs(args); !ok {
		return code
	}
	st, err := sf.openStore(ctx)
	if err != nil {
		e.errorf("token list: %s", sf.explain(err))
		return exitFailure
	}
	defer st.Close()
	tokens, err := st.TokenList(ctx)
	if err != nil {
		e.errorf("token list: %s", sf.explain(err))
		return exitFailure
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tROLE\tCREATED\tLAST USED\tREVOKED")
	for _, t := range tokens {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, t.Role, when(t.CreatedAt), when(t.LastUsedAt), when(t.RevokedAt))
	}
	tw.Flush()
	return exitOK
}

func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(time.DateTime)
}

func runTokenRevoke(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "token revoke", "andon token revoke ID [flags]", tokenAbout)
	sf := addStoreFlags(fs)
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return fs.usageError("want one token ID (andon token list shows them)")
	}
	s := sf.openFor(ctx, e, "token revoke", true)
	if s == nil {
		return exitFailure
	}
	defer s.close()
	err := s.store.TokenRevoke(ctx, pos[0], time.Now())
	if errors.Is(err, token.ErrNotFound) {
		e.errorf("token revoke: no token %q (andon token list shows them)", pos[0])
		return exitFailure
	}
	if err != nil {
		e.errorf("token revoke: %s", sf.explain(err))
		return exitFailure
	}
	s.record(ctx, e, audit.ActionTokenRevoked, "token "+pos[0])
	fmt.Fprintf(e.stderr, "andon: token %s revoked\n", pos[0])
	return exitOK
}

// describeToken names a token for an audit row: never its secret.
func describeToken(t *token.Token) string {
	return fmt.Sprintf("token %s (%s, %s)", t.ID, t.Name, t.Role)
}
