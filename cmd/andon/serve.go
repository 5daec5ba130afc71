package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/andonhq/andon/api"
)

// defaultAPI is where `andon serve` listens, and where the other commands
// look for it.
const defaultAPI = "127.0.0.1:7700"

func runServe(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "serve", "andon serve [flags]",
		"Run andon: the agent runtime, its workers and its JSON API, on one\n"+
			"database (a SQLite file, or PostgreSQL shared with andon workers;\n"+
			"--workers 0 serves the API and executes nothing). On first start with\n"+
			"no config, it writes a demo config (andon.yaml: the mcptest server over\n"+
			"stdio) and a demo script (demo-slow.yaml) so that a run can be started\n"+
			"and cancelled at once. On a database without API tokens it makes an\n"+
			"admin token and writes it to andon.token (mode 0600), where the other\n"+
			"commands find it.")
	sf := addStoreFlags(fs)
	configPath := fs.String("config", "andon.yaml", "the MCP servers config `file`; created with a demo if missing")
	addr := fs.String("addr", defaultAPI, "serve the API on this loopback `address`")
	var allowed hostList
	fs.Var(&allowed, "allowed-host", "answer requests whose Host header names this `name` too, besides loopback's (localhost, 127.0.0.1, [::1]): "+
		"the name a reverse proxy passes on (repeat, or comma-separate, for more); any other is refused (421), against DNS rebinding")
	tokenFile := fs.String("token-file", defaultTokenFile, "where to write the first API token (an admin, mode 0600) if the database has none")
	rf := addRuntimeFlags(fs, "execute at most `N` runs at once; 0: serve the API only, and leave the runs to andon workers on the same database. "+
		"A run mostly waits for its model and tools, so the default is high: on 2 cores, short runs/s peaked at 16–64 on SQLite "+
		"(its one writer) and kept rising slowly past 64 on PostgreSQL; each run in flight costs about 32 KiB")
	verbose := fs.Bool("v", false, "log debug detail")
	oaf := addOpenAIFlags(fs)
	if _, code, ok := fs.parse(args); !ok {
		return code
	}
	if err := checkLoopback(*addr); err != nil {
		return fs.usageError("%v", err)
	}
	for _, h := range allowed {
		if err := api.CheckHostName(h); err != nil {
			return fs.usageError("--allowed-host: %v", err)
		}
	}
	if rf.workers < 0 {
		return fs.usageError("--workers %d: want 0 or more", rf.workers)
	}
	if err := rf.check(); err != nil {
		return fs.usageError("%v", err)
	}
	if oaf.baseURL == "" && (oaf.model != "" || oaf.credential != "") {
		return fs.usageError("--openai-model and --openai-credential need --openai-base-url")
	}
	// Listen first: a port that is taken fails serve before it writes a
	// demo config, a key or a token.
	ln, err := listen(*addr)
	if err != nil {
		e.errorf("%v", err)
		return exitFailure
	}
	defer ln.Close()
	logger := newLogger(e, *verbose)
	cfg, err := loadOrWriteDemo(e, *configPath)
	if err != nil {
		e.errorf("%v", err)
		return exitFailure
	}
	cfg.LogWarnings(logger, *configPath)
	n, st, err := assemble(ctx, e, sf, cfg, oaf, rf, logger, allowed)
	if err != nil {
		e.errorf("%v", err)
		return exitFailure
	}
	defer st.close()
	defer n.Close()
	if err := bootstrapToken(ctx, e, st.store, n.Audit(), *tokenFile); err != nil {
		e.errorf("%v", err)
		return exitFailure
	}
	// Shutdown waits for requests to end; the event streams end with Run.
	srv := &http.Server{Handler: n.Handler(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(e.stderr, "andon: serving the API on http://%s (database %s, config %s); Ctrl-C stops\n", ln.Addr(), sf.where(), *configPath)

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	runDone := make(chan error, 1)
	go func() { runDone <- n.Run(ctx) }()
	serveDone := make(chan error, 1)
	go func() { serveDone <- srv.Serve(ln) }()
	shutdown := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}
	select {
	case <-ctx.Done():
	case err := <-serveDone:
		e.errorf("serving: %v", err)
		stop()
		<-runDone
		return exitFailure
	case err := <-runDone:
		runDone <- err // for the wait below
		if ctx.Err() == nil {
			// The runtime stopped on its own (its queue could not start,
			// or failed): an API whose runs never execute must not stay up.
			e.errorf("%v", err)
			stop()
			shutdown()
			<-runDone
			return exitFailure
		}
	}
	shutdown()
	<-runDone
	n.Close()
	fmt.Fprintln(e.stderr, "andon: stopped")
	return exitOK
}

// checkLoopback refuses an address that is not on loopback. The API
// authenticates every request with a bearer token, but it speaks plain
// HTTP: off loopback the tokens would cross the network in clear text, for
// anyone on the path to copy. Serving beyond loopback waits for TLS (or sits
// behind a TLS-terminating proxy on the same machine, which loopback
// allows).
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %v", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--addr %q is not a loopback address; the API speaks plain HTTP, so its tokens would cross the network in clear text (put a TLS proxy on this machine in front of it)", addr)
	}
	return nil
}

// openaiFlags configure the OpenAI-compatible model of serve.
type openaiFlags struct {
	baseURL, model, credential string
}

func addOpenAIFlags(fs *flagSet) *openaiFlags {
	f := &openaiFlags{}
	fs.StringVar(&f.baseURL, "openai-base-url", "", "make the model \"openai\" available to runs: the `URL` of an OpenAI-compatible chat-completions API (https://api.openai.com/v1, http://127.0.0.1:11434/v1 for Ollama, …)")
	fs.StringVar(&f.model, "openai-model", "", "the `name` of the model the model \"openai\" asks for; a run may name another with \"openai:NAME\"")
	fs.StringVar(&f.credential, "openai-credential", "", "the `secret` (andon secret set NAME --placement bearer --host HOST) holding the API key; none for a server that needs no key")
	return f
}

// demoConfig is written on first start: the mcptest server over stdio,
// without approvals, so the demo run goes straight to the slow tool.
const demoConfig = `# andon's MCP servers. andon serve wrote this demo on first start; edit it
# freely. "@andon" runs this andon binary (here: its scriptable test server).
servers:
  - name: demo
    # -record: the server appends every message it receives, and what its
    # tools did, to demo-record.jsonl in the directory serve runs in: the
    # notifications/cancelled of a cancelled run's call shows there.
    command: ["@andon", "mcptest", "serve", "-record", "demo-record.jsonl"]
    # Imported tools are non-idempotent writes that need an operator's
    # approval unless said otherwise; the demo's are harmless.
    requires_approval: false
    effects:
      echo: read_only
      slow: read_only
    # Each call's budget, every leg in (reconnecting, the handshake, the
    # call): timeout (default 60s), of which connect_timeout for
    # (re)connecting. A tool may have its own; progress_resets_timeout: true
    # restarts the timeout on each progress report, up to max_timeout.
    timeout: 60s
    connect_timeout: 15s
    tools:
      slow: {timeout: 5m}  # demo-slow.yaml runs it for a minute
      progress: {timeout: 30s, progress_resets_timeout: true, max_timeout: 10m}
# Every run's limits (left out: the defaults shown); a flag of serve wins.
# runs:
#   max_rounds: 20
#   max_calls_per_turn: 32
#   max_calls_per_run: 256
`

// demoScript calls the demo server's slow tool for a minute: time enough to
// cancel it.
const demoScript = `# A script for andon's script model: andon run --script demo-slow.yaml
steps:
  - tool_calls:
      - name: mcp_demo_slow
        arguments: {ms: 60000}
  - text: The slow tool finished.
`

// loadOrWriteDemo loads the config at path; if there is none, it writes the
// demo config (and the demo script beside it) first, readable by the user
// alone: the config is where an operator may add a server's headers.
func loadOrWriteDemo(e *env, path string) (*fileConfig, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if err := os.WriteFile(path, []byte(demoConfig), 0o600); err != nil {
			return nil, fmt.Errorf("writing the demo config: %w", err)
		}
		scriptPath := filepath.Join(filepath.Dir(path), "demo-slow.yaml")
		if _, err := os.Stat(scriptPath); errors.Is(err, fs.ErrNotExist) {
			if err := os.WriteFile(scriptPath, []byte(demoScript), 0o600); err != nil {
				return nil, fmt.Errorf("writing the demo script: %w", err)
			}
		}
		fmt.Fprintf(e.stderr, "andon: no config found; wrote a demo config to %s and a demo script to %s\n", path, scriptPath)
		fmt.Fprintf(e.stderr, "andon: try: andon run --script %s   then: andon cancel RUN\n", scriptPath)
	}
	return loadConfig(path)
}
