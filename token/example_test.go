package token_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/andonhq/andon/sqlstore"
	"github.com/andonhq/andon/token"
)

// A token is made once, its secret handed to its user, and from then on
// a request is authenticated by the hash of the secret it carries: the
// store holds nothing else of it.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "token-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := sqlstore.Open(ctx, filepath.Join(dir, "andon.db")) // a token.Store
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	role, err := token.ParseRole("operator")
	if err != nil {
		log.Fatal(err)
	}
	secret, created, err := token.Create(ctx, store, "alice", role)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("secret starts with", token.Prefix, strings.HasPrefix(secret, token.Prefix))

	// What an API server does with the bearer token of a request.
	tok, err := store.TokenByHash(ctx, token.Hash(secret))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tok.ID == created.ID, tok.Name, tok.Role)
	fmt.Println("may start runs:", tok.Role.AtLeast(token.RoleOperator), "may manage servers:", tok.Role.AtLeast(token.RoleAdmin))

	_, err = store.TokenByHash(ctx, token.Hash(token.Prefix+"guessed"))
	fmt.Println("unknown secret:", errors.Is(err, token.ErrNotFound))

	if err := store.TokenRevoke(ctx, tok.ID, time.Now()); err != nil {
		log.Fatal(err)
	}
	tok, err = store.TokenByHash(ctx, token.Hash(secret))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("revoked:", !tok.RevokedAt.IsZero())

	_, err = token.ParseRole("root")
	fmt.Println(err)
	// Output:
	// secret starts with andon_ true
	// true alice operator
	// may start runs: true may manage servers: false
	// unknown secret: true
	// revoked: true
	// token: unknown role "root" (want admin, operator or viewer)
}
