package mcptest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// Main runs a server over stdin and stdout, as a stdio MCP server
// executable does, and returns the process exit status: 0 when stdin ends,
// 2 for bad flags, 3 when the crash tool ends the connection. args are the
// flags, without the program name:
//
//	-record FILE      append every record to FILE as a JSON line
//	-versions LIST    comma-separated revisions to serve (default: all)
//	-silent-discover  ignore server/discover instead of refusing it
//	-page-size N      split listings (tools, resources, prompts) into pages of N
//	-invalid-tool     also offer bad_header (an invalid x-mcp-header)
//	-elicit           also offer elicit, a tool that asks the user a question
//	-http ADDR        serve HTTP on ADDR (a loopback address such as
//	                  127.0.0.1:0) instead of stdio; the URL is printed on
//	                  stdout as the first line
//	-generations LIST comma-separated HTTP generations: stateless,
//	                  sessions, sse (default: stateless,sessions)
//	-json-response    answer HTTP requests with JSON, not event streams
//	-stall LIST       comma-separated methods to record and never answer
//	                  (Options.Stall)
//	-fault FAULT      misbehave on every HTTP POST (HTTPOptions.Fault)
//	-tasks            offer the task tools and declare tasks (Options.Tasks)
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcptest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {} // the error alone: andon mcptest serve -h is the help
	record := fs.String("record", "", "append every record to `FILE` as a JSON line")
	versions := fs.String("versions", "", "comma-separated `revisions` to serve (default: all)")
	silent := fs.Bool("silent-discover", false, "ignore server/discover instead of refusing it")
	pageSize := fs.Int("page-size", 0, "split listings into pages of `N` items")
	invalidTool := fs.Bool("invalid-tool", false, "also offer bad_header, a tool with an invalid x-mcp-header")
	elicit := fs.Bool("elicit", false, "also offer elicit, a tool that asks the user a question")
	httpAddr := fs.String("http", "", "serve HTTP on `ADDR` instead of stdio")
	generations := fs.String("generations", "", "comma-separated HTTP `generations`: stateless, sessions, sse")
	jsonResponse := fs.Bool("json-response", false, "answer HTTP requests with JSON, not event streams")
	stall := fs.String("stall", "", "comma-separated `methods` to record and never answer (e.g. initialize; over HTTP also notifications/initialized, DELETE)")
	fault := fs.String("fault", "", "HTTP `fault` on every POST: silent, headers-then-silence, keep-alive, trickle")
	tasks := fs.Bool("tasks", false, "offer the task tools and declare tasks")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	opts := &Options{SilentDiscover: *silent, PageSize: *pageSize, InvalidTool: *invalidTool, Elicit: *elicit, Stderr: stderr, Tasks: *tasks}
	if *stall != "" {
		opts.Stall = strings.Split(*stall, ",")
	}
	if *versions != "" {
		opts.Versions = strings.Split(*versions, ",")
	}
	s := NewServer(opts)
	if *record != "" {
		f, err := os.OpenFile(*record, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			fmt.Fprintln(stderr, "mcptest:", err)
			return 2
		}
		defer f.Close()
		s.rec.setFile(f)
		defer s.rec.closeFile() // before the file closes: the records still queued

	}
	if *httpAddr != "" {
		hopts := &HTTPOptions{JSONResponse: *jsonResponse, Fault: Fault(*fault)}
		if *generations != "" {
			hopts.Generations = strings.Split(*generations, ",")
		}
		return serveHTTP(ctx, s, *httpAddr, hopts, stdout, stderr)
	}
	err := s.Serve(ctx, stdin, stdout)
	switch {
	case errors.Is(err, errCrash):
		return 3
	case err != nil:
		fmt.Fprintln(stderr, "mcptest:", err)
		return 1
	}
	return 0
}

// serveHTTP serves s over HTTP on addr until ctx ends.
func serveHTTP(ctx context.Context, s *Server, addr string, opts *HTTPOptions, stdout, stderr io.Writer) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(stderr, "mcptest:", err)
		return 1
	}
	srv := &http.Server{Handler: s.HTTPHandler(opts), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "http://%s/mcp\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
		s.Close()
		return 0
	case err := <-done:
		fmt.Fprintln(stderr, "mcptest:", err)
		return 1
	}
}
