package loadtest_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/andonhq/andon/internal/loadtest"
)

func TestMain(m *testing.M) {
	loadtest.MaybeServe() // the test binary is the MCP server's too
	goleak.VerifyTestMain(m)
	os.Exit(0) // not reached: VerifyTestMain exits
}
