package node_test

import (
	"context"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/andonhq/andon/mcp/mcptest"
)

// serveEnv makes the test binary act as an mcptest stdio server, so that
// a test's catalogue runs a real subprocess without building anything.
const serveEnv = "ANDON_TEST_MCPTEST_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "1" {
		os.Exit(mcptest.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}
