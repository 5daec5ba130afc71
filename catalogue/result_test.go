package catalogue_test

import (
	"context"
	"testing"

	"github.com/andonhq/andon/catalogue"
)

// The whole MCP result of a call reaches a context's sink: content and
// structured content as the server sent them, not only the text a model
// reads.
func TestWithCallResultKeepsTheServersResult(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []catalogue.Server{{Name: "s", Command: stdio}}, nil, nil)
	ctx, result := catalogue.WithCallResult(context.Background())
	if _, err := f.call(ctx, "mcp_s_echo", `{"text":"hello"}`); err != nil {
		t.Fatal(err)
	}
	res := result()
	if res == nil || len(res.Content) != 1 || res.Content[0].Text != "hello" || len(res.StructuredContent) == 0 {
		t.Fatalf("the sink holds %+v, want echo's result with its structured content", res)
	}
	_, none := catalogue.WithCallResult(context.Background())
	if none() != nil {
		t.Error("a sink of no call holds a result")
	}
}

// Changed is closed once a server's tools are imported: a listing after it
// sees them.
func TestChangedIsClosedWhenToolsArrive(t *testing.T) {
	t.Parallel()
	f := newFixture(t, []catalogue.Server{{Name: "s", Command: stdio}}, nil, nil)
	changed := f.cat.Changed()
	select {
	case <-changed:
		t.Fatal("Changed is closed before anything changed")
	default:
	}
	f.tool("mcp_s_echo") // imports the server
	<-changed            // a hang here fails the test by its timeout
	select {
	case <-f.cat.Changed():
		t.Fatal("the next Changed is closed already")
	default:
	}
}
