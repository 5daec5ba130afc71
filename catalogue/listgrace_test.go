package catalogue_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp"
)

// The first listing does not wait out a server that is still connecting
// when another can already serve: it lists the healthy server's tools, and
// the late server's join the next listing once it has imported.
func TestFirstListingDoesNotWaitForALateServer(t *testing.T) {
	t.Parallel()
	imported := make(chan string, 4)
	f := newFixture(t, []catalogue.Server{
		{Name: "quick", Command: stdio},
		{Name: "late", Command: stdio, Budget: catalogue.Budget{Timeout: time.Hour}},
	}, nil, &catalogue.Options{
		ListGrace: 10 * time.Millisecond,
		OnImport: func(server string, err error) {
			if err == nil {
				imported <- server
			}
		},
	})
	release := make(chan struct{})
	f.intercept(func(ctx context.Context, s catalogue.Server, next func() (mcp.Transport, error)) (mcp.Transport, error) {
		if s.Name == "late" {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return next()
	})

	// Were the listing to wait for late, whose budget is an hour, this
	// context would end it with an error.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first, err := f.cat.List(ctx)
	if err != nil {
		t.Fatalf("the first listing: %v", err)
	}
	if names := listedNames(first); !hasPrefix(names, "mcp_quick_") || hasPrefix(names, "mcp_late_") {
		t.Fatalf("the first listing = %v, want quick's tools and none of late's", names)
	}

	close(release)
	for got := ""; got != "late"; {
		got = <-imported
	}
	second, err := f.cat.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if names := listedNames(second); !hasPrefix(names, "mcp_late_") {
		t.Errorf("the listing after late imported = %v, want its tools too", names)
	}
}

// With no server imported yet, a listing waits for the first imports: it
// never answers "no tools" while a server is connecting.
func TestFirstListingWaitsWhileNoServerHasImported(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []catalogue.Server{{Name: "late", Command: stdio}}, nil, &catalogue.Options{ListGrace: time.Millisecond})
	release := make(chan struct{})
	f.intercept(func(ctx context.Context, s catalogue.Server, next func() (mcp.Transport, error)) (mcp.Transport, error) {
		<-release
		return next()
	})
	time.AfterFunc(20*time.Millisecond, func() { close(release) })
	tools, err := f.cat.List(context.Background())
	if err != nil || !hasPrefix(listedNames(tools), "mcp_late_") {
		t.Fatalf("List = %v, %v; want late's tools", listedNames(tools), err)
	}
}

func hasPrefix(names []string, prefix string) bool {
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}

func listedNames(tools []agent.Tool) []string {
	var names []string
	for _, t := range tools {
		names = append(names, t.Spec().Name)
	}
	return names
}
