package catalogue_test

import (
	"context"
	"os"
	"strconv"
	"testing"

	"go.uber.org/goleak"

	"github.com/andonhq/andon/mcp/mcptest"
)

// serveEnv makes the test binary act as an mcptest stdio server, so the
// subprocess tests run a real server without building anything first.
// pidFileEnv, if set too, names a file where it writes its process id.
const (
	serveEnv   = "ANDON_TEST_MCPTEST_SERVE"
	pidFileEnv = "ANDON_TEST_MCPTEST_PIDFILE"
)

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "1" {
		if f := os.Getenv(pidFileEnv); f != "" {
			if err := os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
				os.Exit(2)
			}
		}
		os.Exit(mcptest.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}
