package tracing_test

import (
	"context"
	"log"
	"time"

	"github.com/andonhq/andon/tracing"
)

// A program sets tracing up from OTEL_* once, hands the provider on (nil
// when tracing is off), and flushes at exit.
func ExampleFromEnv() {
	ctx := context.Background()
	tr, err := tracing.FromEnv(ctx, "my-program")
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tr.Shutdown(ctx); err != nil {
			log.Print(err)
		}
	}()
	provider := tr.Provider() // node.Config.TracerProvider, mcp.ClientOptions.TracerProvider
	_ = provider
}
