package main

import (
	"context"
	"fmt"

	"github.com/andonhq/andon/agent"
)

func runGateway(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "gateway", "andon gateway --stdio [flags]",
		"Serve the tools of andon.yaml's MCP servers to an MCP client that spawns\n"+
			"this command (a desktop or IDE assistant, a coding agent): MCP on standard\n"+
			"input and output, every revision. Each call is a run of andon's runtime,\n"+
			"recorded in the database beside andon serve's runs: the tool's budget,\n"+
			"the vault's credentials (the client never sees them), approvals, one audit\n"+
			"row, and the operator's stop — cancel the run in the console or with\n"+
			"andon cancel, and the upstream server is told and the client answered\n"+
			"that an operator stopped it. The client's own cancel, or its exit,\n"+
			"cancels its calls the same way. Remote clients use /mcp on andon serve.\n"+
			"Logs go to standard error; standard output is the MCP stream alone.")
	sf := addStoreFlags(fs)
	configPath := fs.String("config", "andon.yaml", "the MCP servers config `file`")
	stdio := fs.Bool("stdio", false, "serve MCP on standard input and output (required: the HTTP gateway is /mcp on andon serve)")
	watch := fs.Duration("watch-interval", agent.DefaultWatchInterval, "how often the watcher polls for calls cancelled elsewhere (an operator's cancel through andon serve; on PostgreSQL NOTIFY brings it at once)")
	verbose := fs.Bool("v", false, "log debug detail")
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return fs.usageError("unexpected argument %q", pos[0])
	}
	if !*stdio {
		return fs.usageError("--stdio is required: for remote clients, andon serve serves the gateway on /mcp")
	}
	logger := newLogger(e, *verbose)
	cfg, err := loadConfig(*configPath)
	if err != nil {
		e.errorf("%v", err)
		return exitFailure
	}
	cfg.LogWarnings(logger, *configPath)
	// No workers: this process executes its own clients' calls and
	// nobody else's runs (APIOnly); its watcher (and, on PostgreSQL, its
	// listener) carries an operator's cancel made in another process to
	// them. The rest is worker's assembly: andon.yaml's run limits,
	// tracing from OTEL_*.
	rf := &runtimeFlags{watch: *watch, notify: true, lease: agent.DefaultLeaseDuration, reap: agent.DefaultReapInterval}
	n, st, err := assemble(ctx, e, sf, cfg, &openaiFlags{}, rf, logger, nil)
	if err != nil {
		e.errorf("%v", err)
		return exitFailure
	}
	defer st.close()
	defer n.Close()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan error, 1)
	go func() { ran <- n.Run(runCtx) }()
	fmt.Fprintf(e.stderr, "andon: gateway serving MCP on stdio (database %s, config %s)\n", sf.where(), *configPath)
	err = n.Gateway().ServeStream(ctx, e.stdin, e.rawStdout)
	stop()
	<-ran
	if err != nil && ctx.Err() == nil {
		e.errorf("gateway: %v", err)
		return exitFailure
	}
	return exitOK
}
