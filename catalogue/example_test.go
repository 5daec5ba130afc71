package catalogue_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// A catalogue of one server, whose tools are called through one long-lived
// client. Here the server runs in this process; with the default dialler,
// the command would be started as a subprocess.
func Example() {
	cfg, err := catalogue.Parse([]byte(`
servers:
  - name: demo
    command: ["@andon", "mcptest", "serve"]
    requires_approval: false
    effects: {echo: read_only}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := mcptest.NewServer(nil)
	defer srv.Close()
	cat, err := catalogue.New(cfg, &catalogue.Options{
		Dial: func(context.Context, catalogue.Server) (mcp.Transport, error) { return srv.Transport(), nil },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cat.Close()

	ctx := context.Background()
	echo, err := cat.Tool(ctx, "mcp_demo_echo")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(echo.Spec().Name, echo.Effect(), echo.RequiresApproval())
	res, err := echo.Call(ctx, json.RawMessage(`{"text":"hello"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Outcome, res.Text)

	// A call whose context is cancelled is its own outcome.
	slow, _ := cat.Tool(ctx, "mcp_demo_slow")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	res, _ = slow.Call(cctx, json.RawMessage(`{"ms":60000}`))
	fmt.Println(slow.Effect(), res.Outcome, res.Text)
	// Output:
	// mcp_demo_echo read_only false
	// ok hello
	// non_idempotent_write cancelled The call to tool "slow" on server "demo" was cancelled.
}

func ExampleParse_errors() {
	_, err := catalogue.Parse([]byte(`
servers:
  - name: Tickets
    url: https://tickets.example.com/mcp
    effects: {search: readonly}
`))
	fmt.Println(err)
	// Output:
	// servers[0]: catalogue: server "Tickets": name "Tickets" must be 1 to 32 of a-z 0-9 _ -; effects: tool "search": effect "readonly" is not read_only, idempotent_write or non_idempotent_write
}

func ExampleLocalName() {
	fmt.Println(catalogue.LocalName("github", "search_issues"))
	fmt.Println(catalogue.LocalName("fs", "files.read"))
	// Output:
	// mcp_github_search_issues
	// mcp_fs_files_read
}

func ExampleEffectOf() {
	readOnly := true
	tool := mcp.Tool{Name: "search", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: &readOnly}}

	untrusted := &catalogue.Server{Name: "s"}
	trusted := &catalogue.Server{Name: "s", TrustAnnotations: true}
	operator := &catalogue.Server{Name: "s", TrustAnnotations: true,
		Effects: map[string]agent.Effect{"search": agent.EffectIdempotentWrite}}
	for _, s := range []*catalogue.Server{untrusted, trusted, operator} {
		fmt.Println(catalogue.EffectOf(s, tool))
	}
	// Output:
	// non_idempotent_write default
	// read_only annotations
	// idempotent_write operator
}
