package api_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/model"
	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/token"
)

// A server with tokens: a viewer may list runs but not start one, and a
// request without a token is refused.
func ExampleNewHandler_tokens() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "andon-api-example")
	defer os.RemoveAll(dir)
	store, err := sqlstore.Open(ctx, filepath.Join(dir, "andon.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	rt, _ := agent.New(agent.Config{Store: store, Tools: noTools{},
		NewModel: func(context.Context, *agent.Request) (model.Model, error) { return nil, fmt.Errorf("no model") }})
	defer rt.Close()
	log := audit.New(store, bytes.Repeat([]byte{1}, audit.MinKeySize)) // derive the key from the vault in real use
	handler, _ := api.NewHandler(api.Config{Runtime: rt, Store: store, Audit: log, Tokens: store})
	srv := httptest.NewServer(handler)
	defer srv.Close()

	secret, tok, _ := token.Create(ctx, store, "vic", token.RoleViewer)
	viewer := &api.Client{BaseURL: srv.URL, Token: secret}
	runs, err := viewer.ListRuns(ctx, agent.RunFilter{})
	fmt.Println(len(runs), err, tok.Role)
	_, err = viewer.CreateRun(ctx, &agent.Request{Prompt: "hello"})
	fmt.Println(err)
	_, err = (&api.Client{BaseURL: srv.URL}).ListRuns(ctx, agent.RunFilter{})
	fmt.Println(err)
	// Output:
	// 0 <nil> viewer
	// api: this needs the role operator or above; your token's is viewer (forbidden)
	// api: this needs an API token: send Authorization: Bearer TOKEN (unauthenticated)
}
