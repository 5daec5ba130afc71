package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
	"github.com/andonhq/andon/node"
	"github.com/andonhq/andon/vault"
)

// A program embeds andon: its own MCP server (here the scriptable test
// server, in the same process), its own config, a SQLite file in a
// directory of its own. It starts a run through the runtime and reads how
// the run ended.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "andon-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// The MCP servers, as andon.yaml would give them; "tools" is reached
	// through Dial below, so it needs neither a command nor a URL to run.
	servers, err := catalogue.Parse([]byte(`
servers:
  - name: tools
    command: ["unused: Dial reaches it"]
    requires_approval: false
    effects: {echo: read_only}
`))
	if err != nil {
		log.Fatal(err)
	}
	srv := mcptest.NewServer(nil)
	defer srv.Close()

	key, err := vault.NewKey() // keep it: it opens the secrets and the audit log
	if err != nil {
		log.Fatal(err)
	}
	n, err := node.New(ctx, &node.Config{
		DB:      filepath.Join(dir, "andon.db"),
		Key:     key,
		Servers: servers,
		Dial: func(context.Context, catalogue.Server) (mcp.Transport, error) {
			return srv.Transport(), nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer n.Close()

	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- n.Run(runCtx) }()

	// The script model calls the server's echo tool, then answers.
	run, err := n.Runtime().Submit(ctx, "embedder", &agent.Request{
		Prompt: "say hello",
		Script: json.RawMessage(`{"steps": [
			{"tool_calls": [{"name": "mcp_tools_echo", "arguments": {"text": "hello from the MCP server"}}]},
			{"text": "The server said hello."}]}`),
	})
	if err != nil {
		log.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if run, err = n.Store().RunGet(ctx, run.ID); err != nil {
			log.Fatal(err)
		}
		if run.Status.Terminal() || time.Now().After(deadline) {
			break
		}
	}
	fmt.Println("run:", run.Status)
	steps, err := n.Store().StepList(ctx, run.ID)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range steps {
		if s.Kind == agent.StepTool {
			fmt.Printf("%s: %s %q\n", s.Tool, s.Outcome, s.Text)
		}
	}
	fmt.Println("answer:", steps[len(steps)-1].Text)

	stop()
	fmt.Println("stopped:", <-stopped)
	// Output:
	// run: completed
	// mcp_tools_echo: ok "hello from the MCP server"
	// answer: The server said hello.
	// stopped: context canceled
}
