package sqlstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/sqlstore"
)

// A store on a SQLite file in a temporary directory: Open applies the
// migrations, and the run row it holds is the one definition of
// cancelled, which a guarded statement moves once.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "sqlstore-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	dsn := filepath.Join(dir, "andon.db") // postgres://… would open PostgreSQL
	fmt.Println("PostgreSQL:", sqlstore.IsPostgres(dsn))
	store, err := sqlstore.Open(ctx, dsn)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	run := &agent.Run{ID: "run_1", Owner: "alice", Request: json.RawMessage(`{"prompt":"hello"}`)}
	if err := store.RunInsert(ctx, run); err != nil {
		log.Fatal(err)
	}
	fmt.Println(run.ID, run.Status)

	// Someone else's cancel is refused; the owner's wins; a second cancel
	// finds the run finished and wins nothing.
	for _, by := range []agent.Actor{{ID: "bob"}, {ID: "alice"}, {ID: "carol", Admin: true}} {
		won, _, err := store.RunCancel(ctx, run.ID, by, false)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("cancel by %s: won=%v\n", by.ID, won)
	}
	got, err := store.RunGet(ctx, run.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got.ID, got.Status, got.Status.Terminal())
	// Output:
	// PostgreSQL: false
	// run_1 queued
	// cancel by bob: won=false
	// cancel by alice: won=true
	// cancel by carol: won=false
	// run_1 cancelled true
}
