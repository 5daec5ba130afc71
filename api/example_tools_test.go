package api_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
	"github.com/andonhq/andon/model"
	"github.com/andonhq/andon/sqlstore"
)

// An operator imports a server's tools through the API, then disables one
// and reclassifies another. The settings are kept in the database, with
// who made them.
func ExampleClient_PatchTool() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "andon-api-tools-example")
	defer os.RemoveAll(dir)
	store, err := sqlstore.Open(ctx, filepath.Join(dir, "andon.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	srv := mcptest.NewServer(nil)
	defer srv.Close()
	cat, _ := catalogue.New(&catalogue.Config{Servers: []catalogue.Server{{Name: "demo", Command: []string{"@andon", "mcptest", "serve"}}}},
		&catalogue.Options{
			Dial:     func(context.Context, catalogue.Server) (mcp.Transport, error) { return srv.Transport(), nil },
			Settings: store,
		})
	defer cat.Close()
	rt, _ := agent.New(agent.Config{Store: store, Tools: cat,
		NewModel: func(context.Context, *agent.Request) (model.Model, error) { return nil, fmt.Errorf("no model") }})
	defer rt.Close()
	handler, _ := api.NewHandler(api.Config{Runtime: rt, Store: store, Catalogue: cat})
	hs := httptest.NewServer(handler)
	defer hs.Close()

	c := &api.Client{BaseURL: hs.URL}
	tools, err := c.ImportServer(ctx, "demo")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(tools), "tools imported")

	off, readOnly := false, "read_only"
	crash, _ := c.PatchTool(ctx, "mcp_demo_crash", &api.ToolPatch{Enabled: &off})
	echo, _ := c.PatchTool(ctx, "mcp_demo_echo", &api.ToolPatch{Effect: &readOnly})
	fmt.Println(crash.Name, "enabled:", crash.Enabled)
	fmt.Println(echo.Name, echo.Effect, echo.EffectSource, "by", echo.UpdatedBy)

	_, err = c.PatchTool(ctx, "mcp_demo_echo", &api.ToolPatch{})
	fmt.Println(err)
	// Output:
	// 15 tools imported
	// mcp_demo_crash enabled: false
	// mcp_demo_echo read_only operator by local
	// api: the body changes nothing: set enabled, effect or requires_approval (bad_request)
}
