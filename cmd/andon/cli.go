package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/tracing"
)

// Exit codes. They are a contract with scripts that run andon: keep them.
const (
	exitOK        = 0   // success
	exitToolError = 1   // the tool ran and reported an error (isError)
	exitUsage     = 2   // bad flags or arguments; nothing was started
	exitTransport = 3   // connect failed, server crashed, RPC or protocol error
	exitTimeout   = 124 // the call's own timeout passed (as timeout(1) does)
	exitSignal    = 130 // cancelled by SIGINT or SIGTERM (128 + SIGINT)
)

// env is what a command may touch of the outside world. Commands take it
// instead of reaching for os.Stdout and friends, so tests can run them
// in-process.
type env struct {
	stdin io.Reader
	// stdout and stderr escape what a command prints for a terminal
	// (terminalWriter): every command prints through them.
	stdout io.Writer
	stderr io.Writer
	// rawStdout is the standard output as run was given it, for a stream
	// that is a protocol and never a person's screen: mcptest serve's
	// JSON-RPC.
	rawStdout io.Writer
	// tty is the standard error when it is a terminal, else nil: where the
	// progress bar draws, with control sequences of its own.
	tty *os.File
}

// newEnv returns the env of a command run with these streams, and a
// function that flushes its stdout and stderr, to call when it is done.
func newEnv(stdin io.Reader, stdout, stderr io.Writer) (*env, func()) {
	out, errOut := newTerminalWriter(stdout), newTerminalWriter(stderr)
	e := &env{stdin: stdin, stdout: out, stderr: errOut, rawStdout: stdout}
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		e.tty = f
	}
	return e, func() {
		out.Flush()
		errOut.Flush()
	}
}

// errorf prints one line to stderr, prefixed "andon: ". It is where every
// error is printed, and an error's text may carry a server's message: it is
// made one printable line, whatever the server put in it.
func (e *env) errorf(format string, args ...any) {
	fmt.Fprintln(e.stderr, "andon: "+printable(fmt.Sprintf(format, args...)))
}

// terminal reports whether stderr is a terminal, and its file if so. A
// progress bar is drawn only then: in a pipe or a log file it is noise.
func (e *env) terminal() (*os.File, bool) {
	return e.tty, e.tty != nil
}

// flagSet is a subcommand's flags and how to report their misuse.
type flagSet struct {
	*flag.FlagSet
	e     *env
	usage string // the synopsis, e.g. "andon call [flags] TOOL [ARGS]"
	about string // what the command does, shown by -h
}

// newFlagSet returns an empty flag set for the subcommand name. Parse errors
// are reported by parse, as one "andon:" line and the synopsis.
func newFlagSet(e *env, name, usage, about string) *flagSet {
	fs := flag.NewFlagSet("andon "+name, flag.ContinueOnError)
	// The flag package would print its own error and the full defaults on
	// every mistake; parse prints one clear line instead.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flagSet{FlagSet: fs, e: e, usage: usage, about: about}
}

// parse parses args, letting flags and positional arguments mix (andon call
// TOOL '{}' --json works); "--" ends the flags. It returns the positional
// arguments, or an exit code when the command should stop: exitOK for -h,
// exitUsage for a mistake (already reported).
func (fs *flagSet) parse(args []string) (pos []string, code int, ok bool) {
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fs.help(fs.e.stdout)
			return nil, exitOK, false
		}
		if err != nil {
			return nil, fs.usageError("%v", err), false
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), 0, true
		}
		if len(rest) == 0 {
			return pos, 0, true
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// parseNoArgs is parse for a command that takes flags only.
func (fs *flagSet) parseNoArgs(args []string) (code int, ok bool) {
	pos, code, ok := fs.parse(args)
	if !ok {
		return code, false
	}
	if len(pos) > 0 {
		return fs.usageError("unexpected argument %q", pos[0]), false
	}
	return 0, true
}

// usageError reports a mistake in how the command was invoked and returns
// exitUsage.
func (fs *flagSet) usageError(format string, args ...any) int {
	fs.e.errorf("%s: %s", strings.TrimPrefix(fs.Name(), "andon "), fmt.Sprintf(format, args...))
	fmt.Fprintf(fs.e.stderr, "usage: %s\nRun '%s -h' for help.\n", fs.usage, fs.Name())
	return exitUsage
}

// help prints the command's synopsis, description and flags.
func (fs *flagSet) help(w io.Writer) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n\nFlags:\n", fs.usage, fs.about)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// serverFlags are the flags of every command that talks to an MCP server.
type serverFlags struct {
	stdio    string
	url      string
	headers  headerFlags
	protocol string
	timeout  time.Duration
	verbose  bool

	// maxResourceSize is ClientOptions.MaxResourceSize, for the commands
	// that read resources (zero: no cap of its own).
	maxResourceSize int

	target target // set by check
}

func addServerFlags(fs *flagSet) *serverFlags {
	f := &serverFlags{}
	fs.StringVar(&f.stdio, "stdio", "", "run the MCP server `COMMAND` (\"prog arg…\", split with shell-like quoting, no shell) and speak to it over stdio")
	fs.StringVar(&f.url, "url", "", "speak to the MCP server at the http or https endpoint `URL` (any HTTP generation, negotiated)")
	fs.Var(&f.headers, "header", "send the header `'Name: value'` with every HTTP request (repeatable; values are never printed)")
	fs.StringVar(&f.protocol, "protocol", "", "pin the protocol `revision` (one of "+strings.Join(mcp.SupportedVersions(), ", ")+"); default: negotiate. "+
		"Over HTTP the revision decides the transport: "+httpGenerations)
	fs.DurationVar(&f.timeout, "timeout", mcp.DefaultRequestTimeout, "give up after `duration`: the budget of the whole command — starting or reaching the server, every leg of the handshake, the request — after which the request is cancelled on the wire and andon exits 124; 0 means no limit on the request (connecting is still bounded, by "+mcp.DefaultConnectTimeout.String()+")")
	fs.BoolVar(&f.verbose, "v", false, "log debug detail (and a --stdio server's stderr) to stderr")
	return f
}

// check validates the flags before anything is started, and works out how
// to reach the server: exactly one of --stdio and --url.
func (f *serverFlags) check(fs *flagSet) (code int, ok bool) {
	switch {
	case f.stdio == "" && f.url == "":
		return fs.usageError("one of --stdio or --url is required"), false
	case f.stdio != "" && f.url != "":
		return fs.usageError("give --stdio or --url, not both"), false
	case f.stdio != "" && len(f.headers.raw) > 0:
		return fs.usageError("--header needs --url"), false
	case f.protocol != "" && !slices.Contains(mcp.SupportedVersions(), f.protocol):
		return fs.usageError("unknown protocol revision %q (want one of %s)", f.protocol, strings.Join(mcp.SupportedVersions(), ", ")), false
	case f.timeout < 0:
		return fs.usageError("negative --timeout %v", f.timeout), false
	}
	if f.stdio != "" {
		s, err := stdioTarget(f.stdio)
		if err != nil {
			return fs.usageError("--stdio: %v", err), false
		}
		f.target = s
		return 0, true
	}
	header, err := f.headers.header()
	if err != nil {
		return fs.usageError("%v", err), false
	}
	s, err := httpTarget(f.url, header)
	if err != nil {
		return fs.usageError("--url: %v", err), false
	}
	f.target = s
	return 0, true
}

// parse parses the command line of a command that talks to a server and
// checks the server flags (see check): the positional arguments, or the
// exit code to return.
func (f *serverFlags) parse(fs *flagSet, args []string) (pos []string, code int, ok bool) {
	pos, code, ok = fs.parse(args)
	if !ok {
		return nil, code, false
	}
	if code, ok := f.check(fs); !ok {
		return nil, code, false
	}
	return pos, 0, true
}

// parseNoArgs is parse for a command that takes no positional arguments.
func (f *serverFlags) parseNoArgs(fs *flagSet, args []string) (code int, ok bool) {
	if code, ok := fs.parseNoArgs(args); !ok {
		return code, false
	}
	return f.check(fs)
}

// budget returns ctx bounded by --timeout: one deadline for everything the
// command does on the server's behalf, connecting included, so that a
// server that never answers the handshake costs the user --timeout, not a
// bound of the handshake's own.
func (f *serverFlags) budget(ctx context.Context) (context.Context, context.CancelFunc) {
	if f.timeout == 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, f.timeout, fmt.Errorf("--timeout %v passed: %w", f.timeout, context.DeadlineExceeded))
}

// connect starts the server (or reaches it) and completes the handshake,
// under ctx (see budget). The client logs to logOut: warnings and errors by
// default, everything with -v (a subprocess's stderr arrives at info level,
// so it shows only with -v). A failure is reported, naming the leg of the
// handshake, and turned into an exit code.
func (f *serverFlags) connect(ctx context.Context, e *env, logOut io.Writer) (*session, int, bool) {
	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: level}))

	tr, err := tracing.FromEnv(ctx, "andon")
	if err != nil {
		e.errorf("%v", err)
		return nil, exitFailure, false
	}
	opts := &mcp.ClientOptions{
		TracerProvider:  tr.Provider(),
		ProtocolVersion: f.protocol,
		// Every request is bounded by the budget in ctx, and only by it.
		RequestTimeout:  -1,
		Logger:          logger,
		MaxResourceSize: f.maxResourceSize,
	}
	if f.timeout > 0 {
		opts.ConnectTimeout = -1 // the budget is the bound
	}
	c, err := mcp.Connect(ctx, f.target.transport, opts)
	if err != nil {
		hint := ""
		if f.target.local && !f.verbose {
			// A server that fails to start usually says why on stderr,
			// which is hidden by default.
			hint = " (-v shows the server's stderr)"
		}
		if f.protocol != "" && !f.target.local && !errors.Is(err, mcp.ErrTimeout) && !interrupted(ctx, err) {
			// A server that lacks the pinned revision's HTTP generation
			// refuses it with a bare status (405 to the GET of HTTP+SSE).
			hint = fmt.Sprintf(" (--protocol %s speaks %s over HTTP; does the server offer it?)", f.protocol, httpGeneration(f.protocol))
		}
		if errors.As(err, new(*mcp.OAuthRequiredError)) {
			hint = " (--url sends no OAuth token of its own: pass one with --header 'Authorization: Bearer TOKEN'," +
				" or give the server auth: oauth in andon.yaml and run 'andon auth login NAME', whose token runs use)"
		}
		e.errorf("connecting to %s: %v%s", f.target.name, err, hint)
		flushTracing(tr, logger)
		return nil, requestFailure(ctx, err), false
	}
	return &session{client: c, logger: logger, tracing: tr}, 0, true
}

// open is budget and connect together, what every command that talks to
// a server does: it returns the context bounded by --timeout for the
// requests to make, and the session, whose close also ends the budget.
// On failure the budget is already ended.
func (f *serverFlags) open(ctx context.Context, e *env, logOut io.Writer) (context.Context, *session, int, bool) {
	ctx, cancel := f.budget(ctx)
	sess, code, ok := f.connect(ctx, e, logOut)
	if !ok {
		cancel()
		return ctx, nil, code, false
	}
	sess.budget, sess.endBudget = ctx, cancel
	return ctx, sess, 0, true
}

// httpGenerations says which HTTP transport each revision speaks: a pinned
// revision pins it too.
const httpGenerations = "2024-11-05 is HTTP+SSE (a GET event stream), 2025-03-26 to 2025-11-25 Streamable HTTP with sessions, 2026-07-28 stateless Streamable HTTP"

// httpGeneration is the HTTP transport of the revision rev.
func httpGeneration(rev string) string {
	switch rev {
	case mcp.Version20241105:
		return "HTTP+SSE (a GET event stream)"
	case mcp.Version20260728:
		return "stateless Streamable HTTP"
	default:
		return "Streamable HTTP with sessions"
	}
}

// session is a connected client and what a command needs around it.
type session struct {
	client *mcp.Client
	logger *slog.Logger
	// budget is the --timeout budget (see open), which bounds the
	// teardown too; endBudget cancels it, after the client is closed. Nil
	// when the session was not opened by open.
	budget    context.Context
	endBudget context.CancelFunc
	// tracing is the session's (OTEL_*), flushed by close.
	tracing *tracing.Tracing
}

// fail reports the failed request what and returns the exit code for err.
// An interrupted request's cancellation is already on its way: close lets
// it go out before the connection closes.
func (s *session) fail(ctx context.Context, e *env, what string, err error) int {
	e.errorf("%s: %v", what, err)
	return requestFailure(ctx, err)
}

// close closes the client. It is bounded: cancellations already on their
// way go out first, calls in flight are cancelled on the wire, an HTTP
// session is ended, and a stdio server gets its stdin closed, then
// SIGTERM, then SIGKILL. Within the budget: once --timeout has passed (or
// a signal came), each step gets a moment, not a grace period
// (mcp.Client.Shutdown), so a stubborn server does not add seconds to it.
func (s *session) close() {
	budget := s.budget
	if budget == nil {
		budget = context.Background()
	}
	if err := s.client.Shutdown(budget); err != nil {
		s.logger.Debug("andon: closing the connection", "error", err)
	}
	if s.endBudget != nil {
		s.endBudget()
	}
	flushTracing(s.tracing, s.logger)
}

// tracingFlushTimeout bounds the export of the spans left at exit.
const tracingFlushTimeout = 5 * time.Second

// flushTracing exports the spans left, within tracingFlushTimeout.
func flushTracing(tr *tracing.Tracing, logger *slog.Logger) {
	if !tr.Enabled() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), tracingFlushTimeout)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil {
		logger.Warn("andon: flushing traces", "error", err)
	}
}

// interrupted reports whether err is the result of the command's context
// being cancelled, which only a signal does.
func interrupted(ctx context.Context, err error) bool {
	return ctx.Err() != nil && errors.Is(err, context.Canceled)
}

// requestFailure maps the error of a request to an exit code.
func requestFailure(ctx context.Context, err error) int {
	switch {
	case interrupted(ctx, err):
		return exitSignal
	case errors.Is(err, mcp.ErrTimeout):
		// --timeout passed, in the handshake or in the request.
		return exitTimeout
	default:
		// ErrClosed, ErrSessionExpired, *HTTPError, *RPCError,
		// *ProtocolError and anything unforeseen: the exchange with the
		// server failed.
		return exitTransport
	}
}
