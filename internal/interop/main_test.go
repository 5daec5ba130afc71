package interop

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/andonhq/andon/mcp/mcptest"
)

// roleEnv switches the test binary into a server role, so that stdio tests
// and benchmarks run a real subprocess without building anything first: the
// binary re-executes itself with roleEnv set.
const roleEnv = "ANDON_INTEROP_ROLE"

// The roles a re-executed test binary can play.
const (
	roleGoSDKServer     = "gosdk-server"      // a go-sdk MCP server over stdio (see gosdkserver_test.go)
	roleGoSDKHTTPServer = "gosdk-http-server" // a go-sdk MCP server over HTTP on 127.0.0.1
	roleMCPTestServer   = "mcptest-server"    // andon's mcptest server over stdio
	roleMCPGoServer     = "mcpgo-server"      // an mcp-go MCP server over stdio (see gateway_peers_test.go)
)

// mcptestRecordEnv names the file an mcptest server subprocess records to.
const mcptestRecordEnv = "ANDON_INTEROP_MCPTEST_RECORD"

func TestMain(m *testing.M) {
	switch role := os.Getenv(roleEnv); role {
	case "":
		goleak.VerifyTestMain(m)
	case roleGoSDKServer:
		os.Exit(runGoSDKServer(context.Background()))
	case roleGoSDKHTTPServer:
		os.Exit(runGoSDKHTTPServer())
	case roleMCPGoServer:
		os.Exit(runMCPGoServer(context.Background()))
	case roleMCPTestServer:
		var args []string
		if path := os.Getenv(mcptestRecordEnv); path != "" {
			args = []string{"-record", path}
		}
		os.Exit(mcptest.Main(context.Background(), args, os.Stdin, os.Stdout, os.Stderr))
	default:
		fmt.Fprintf(os.Stderr, "interop: unknown %s %q\n", roleEnv, role)
		os.Exit(2)
	}
}
