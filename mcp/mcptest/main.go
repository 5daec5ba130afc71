package mcptest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// Main runs a server over stdin and stdout, as a stdio MCP server
// executable does, and returns the process exit status: 0 when stdin ends,
// 2 for bad flags, 3 when the crash tool ends the connection. args are the
// flags, without the program name:
//
//	-record FILE      append every record to FILE as a JSON line
//	-versions LIST    comma-separated revisions to serve (default: all)
//	-silent-discover  ignore server/discover instead of refusing it
//	-page-size N      split tools/list into pages of N tools
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcptest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	record := fs.String("record", "", "append every record to `FILE` as a JSON line")
	versions := fs.String("versions", "", "comma-separated `revisions` to serve (default: all)")
	silent := fs.Bool("silent-discover", false, "ignore server/discover instead of refusing it")
	pageSize := fs.Int("page-size", 0, "split tools/list into pages of `N` tools")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	opts := &Options{SilentDiscover: *silent, PageSize: *pageSize, Stderr: stderr}
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
