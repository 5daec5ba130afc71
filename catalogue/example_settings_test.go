package catalogue_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
	"github.com/andonhq/andon/sqlstore"
)

// An operator imports a server's tools, disables one and reclassifies
// another. The settings live in the database, so every andon process on it
// applies them.
func ExampleCatalogue_SetTool() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "andon-catalogue-example")
	defer os.RemoveAll(dir)
	store, err := sqlstore.Open(ctx, filepath.Join(dir, "andon.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	srv := mcptest.NewServer(nil)
	defer srv.Close()
	cat, err := catalogue.New(&catalogue.Config{Servers: []catalogue.Server{{Name: "demo", Command: []string{"@andon", "mcptest", "serve"}}}},
		&catalogue.Options{
			Dial:     func(context.Context, catalogue.Server) (mcp.Transport, error) { return srv.Transport(), nil },
			Settings: store,
		})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cat.Close()

	tools, err := cat.Import(ctx, "demo")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(tools), "tools;", tools[0].Name, tools[0].Effect, tools[0].EffectSource)

	off := false
	if _, err := cat.SetTool(ctx, "mcp_demo_crash", catalogue.ToolChange{Enabled: &off}, "alice"); err != nil {
		fmt.Println(err)
		return
	}
	echo, _ := cat.SetTool(ctx, "mcp_demo_echo", catalogue.ToolChange{Effect: agent.EffectReadOnly}, "alice")
	fmt.Println(echo.Name, echo.Effect, echo.EffectSource, "by", echo.UpdatedBy)

	crash, _ := cat.Lookup(ctx, "mcp_demo_crash")
	res, _ := crash.Call(ctx, nil)
	fmt.Println(res.Outcome, res.Text)
	// Output:
	// 15 tools; mcp_demo_echo non_idempotent_write default
	// mcp_demo_echo read_only operator by alice
	// failed Tool "crash" of server "demo" is disabled by an operator; it was not called.
}
