package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/egress"
	"github.com/andonhq/andon/mcp/oauth"
)

const authAbout = `Connect andon to MCP servers behind OAuth (auth: oauth in andon.yaml). The
tokens are kept in the vault, encrypted at rest, and sent only to the
server they were issued for; every token request goes through egress and
is an oauth_token audit row (never the token).

  andon auth login SERVER    authorize andon in a browser: prints the URL
        (and opens a browser where there is one, unless --no-browser),
        waits for the authorization server's redirect to a loopback
        address, and stores the token. A server with client_credentials
        gets its token at once.
  andon auth status [SERVER] which servers have a token, from which
        issuer, until when, with which scopes; never a token
  andon auth logout SERVER   remove the server's tokens

Exit codes: 0 success, 1 failure, 2 usage error.`

// envNoBrowser, if set, stops `andon auth login` from opening a browser.
const envNoBrowser = "ANDON_NO_BROWSER"

// runAuth is "andon auth": login, status and logout.
func runAuth(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		e.errorf("auth: missing subcommand")
		fmt.Fprintln(e.stderr, authAbout)
		return exitUsage
	}
	if isHelp(args[0]) || args[0] == "help" {
		fmt.Fprintln(e.stdout, authAbout)
		return exitOK
	}
	switch args[0] {
	case "login":
		return runAuthLogin(ctx, e, args[1:])
	case "status":
		return runAuthStatus(ctx, e, args[1:])
	case "logout":
		return runAuthLogout(ctx, e, args[1:])
	}
	e.errorf("auth: unknown subcommand %q (want login, status or logout)", args[0])
	return exitUsage
}

// authFlags are the flags every auth subcommand shares.
type authFlags struct {
	store  *storeFlags
	config *string
}

func addAuthFlags(fs *flagSet) *authFlags {
	return &authFlags{
		store:  addStoreFlags(fs),
		config: fs.String("config", "andon.yaml", "the MCP servers config `file`"),
	}
}

// servers returns the servers of the config that have auth: oauth, or the
// one called name (which must have it).
func (f *authFlags) servers(name string) ([]catalogue.Server, error) {
	cfg, err := catalogue.Load(*f.config)
	if err != nil {
		return nil, err
	}
	var out []catalogue.Server
	for _, s := range cfg.Servers {
		if name != "" && s.Name != name {
			continue
		}
		if s.Auth != catalogue.AuthOAuth {
			if name != "" {
				return nil, fmt.Errorf("server %q does not have auth: oauth in %s", name, *f.config)
			}
			continue
		}
		out = append(out, s)
	}
	if name != "" && len(out) == 0 {
		return nil, fmt.Errorf("no server called %q in %s", name, *f.config)
	}
	return out, nil
}

// server parses the command line of an auth command that acts on one
// server, named by the only argument, and finds that server in the config.
func (f *authFlags) server(fs *flagSet, e *env, args []string) (catalogue.Server, int, bool) {
	pos, code, ok := fs.parse(args)
	if !ok {
		return catalogue.Server{}, code, false
	}
	if len(pos) != 1 {
		return catalogue.Server{}, fs.usageError("want exactly one SERVER"), false
	}
	servers, err := f.servers(pos[0])
	if err != nil {
		e.errorf("%s: %v", strings.TrimPrefix(fs.Name(), "andon "), err)
		return catalogue.Server{}, exitFailure, false
	}
	return servers[0], 0, true
}

func runAuthLogin(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "auth login", "andon auth login SERVER [flags]", authAbout)
	af := addAuthFlags(fs)
	noBrowser := fs.Bool("no-browser", false, "print the URL only; never open a browser (also "+envNoBrowser+"=1)")
	timeout := fs.Duration("timeout", 10*time.Minute, "how long to wait for the authorization")
	verbose := fs.Bool("v", false, "log the OAuth client's steps (never a token)")
	s, code, ok := af.server(fs, e, args)
	if !ok {
		return code
	}
	st := af.store.openFor(ctx, e, "auth login", true)
	if st == nil {
		return exitFailure
	}
	defer st.close()
	log, err := st.auditLog(ctx)
	if err != nil {
		e.errorf("auth login: %v", err)
		return exitFailure
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	lb, err := oauth.NewLoopbackRedirect(ctx)
	if err != nil {
		e.errorf("auth login: %v", err)
		return exitFailure
	}
	defer lb.Close()
	browser := !*noBrowser && os.Getenv(envNoBrowser) == ""
	tr, err := catalogue.NewOAuthTransport(ctx, s, &catalogue.OAuthSetup{
		Egress:      egress.Config{Audit: log, Secrets: st.vault, Logger: newLogger(e, *verbose)},
		Vault:       st.vault,
		RedirectURL: lb.URL,
		Authorize: func(ctx context.Context, authURL string) (url.Values, error) {
			fmt.Fprintf(e.stderr, "andon: to authorize andon for server %q, open this URL in a browser:\n", s.Name)
			fmt.Fprintln(e.stdout, authURL)
			if browser {
				openSystemBrowser(ctx, authURL, e)
			}
			fmt.Fprintln(e.stderr, "andon: waiting for the authorization (Ctrl-C stops)…")
			return lb.Wait(ctx)
		},
	})
	if err != nil {
		e.errorf("auth login: %v", err)
		return exitFailure
	}
	key, err := tr.Login(ctx, s.URL)
	if err != nil {
		e.errorf("auth login: server %q: %v", s.Name, err)
		return exitFailure
	}
	if _, err := log.Record(ctx, audit.Entry{Action: audit.ActionSecretSet, Purpose: "cli auth login " + s.Name + " issuer " + key.Issuer, OK: true, Reason: "oauth token stored"}); err != nil {
		e.errorf("auth login: writing the audit row: %v", err)
	}
	fmt.Fprintf(e.stderr, "andon: server %q: logged in (issuer %s); the token is in the vault\n", s.Name, key.Issuer)
	return exitOK
}

// openSystemBrowser opens u in the user's browser, where there is one: never
// without a display on Linux, and never an error that stops the login
// (the URL is printed). It is not waited for beyond a moment.
func openSystemBrowser(ctx context.Context, u string, e *env) {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.CommandContext(ctx, "open", u)
	case "windows":
		cmd = exec.CommandContext(ctx, "rundll32", "url.dll,FileProtocolHandler", u)
	default:
		if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
			return
		}
		path, err := exec.LookPath("xdg-open")
		if err != nil {
			return
		}
		cmd = exec.CommandContext(ctx, path, u)
	}
	if err := cmd.Start(); err != nil {
		return
	}
	go func() { _ = cmd.Wait() }()
	fmt.Fprintln(e.stderr, "andon: opened a browser")
}

func runAuthStatus(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "auth status", "andon auth status [SERVER] [flags]", authAbout)
	af := addAuthFlags(fs)
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(pos) > 1 {
		return fs.usageError("want at most one SERVER")
	}
	name := ""
	if len(pos) == 1 {
		name = pos[0]
	}
	servers, err := af.servers(name)
	if err != nil {
		e.errorf("auth status: %v", err)
		return exitFailure
	}
	st := af.store.openFor(ctx, e, "auth status", true)
	if st == nil {
		return exitFailure
	}
	defer st.close()
	tw := tabwriter.NewWriter(e.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATUS\tISSUER\tEXPIRES\tREFRESH\tSCOPES")
	for _, s := range servers {
		logins, err := catalogue.OAuthLogins(ctx, st.vault, s)
		if err != nil {
			e.errorf("auth status: server %q: %v", s.Name, err)
			return exitFailure
		}
		if len(logins) == 0 {
			fmt.Fprintf(tw, "%s\tneeds `andon auth login %s`\t\t\t\t\n", s.Name, s.Name)
			continue
		}
		for _, l := range logins {
			expires, refresh := "-", "no"
			if !l.Expiry.IsZero() {
				expires = l.Expiry.UTC().Format("2006-01-02 15:04:05")
			}
			if l.Refreshable {
				refresh = "yes"
			}
			fmt.Fprintf(tw, "%s\tlogged in\t%s\t%s\t%s\t%s\n", s.Name, l.Issuer, expires, refresh, strings.Join(l.Scopes, " "))
		}
	}
	if err := tw.Flush(); err != nil {
		return exitFailure
	}
	return exitOK
}

func runAuthLogout(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "auth logout", "andon auth logout SERVER [flags]", authAbout)
	af := addAuthFlags(fs)
	s, code, ok := af.server(fs, e, args)
	if !ok {
		return code
	}
	st := af.store.openFor(ctx, e, "auth logout", true)
	if st == nil {
		return exitFailure
	}
	defer st.close()
	n, err := catalogue.OAuthLogout(ctx, st.vault, s)
	if err != nil {
		e.errorf("auth logout: %v", err)
		return exitFailure
	}
	if n > 0 {
		st.record(ctx, e, audit.ActionSecretRemoved, "auth logout "+s.Name)
	}
	fmt.Fprintf(e.stderr, "andon: server %q: removed %d token(s)\n", s.Name, n)
	return exitOK
}
