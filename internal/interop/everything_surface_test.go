package interop

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/andonhq/andon/internal/nodepeer"
	"github.com/andonhq/andon/mcp"
)

// everything starts @modelcontextprotocol/server-everything over stdio
// (it has no 2026-07-28, so the client falls back to 2025-11-25) and
// connects andon's client to it with opts. It skips without node (fails
// under CI).
func everything(t *testing.T, opts mcp.ClientOptions) (*mcp.Client, *logBuffer) {
	t.Helper()
	modules := nodepeer.Install(t, nodepeer.ServerEverything, nodepeer.SDK, nodepeer.OIDCProvider)
	entry := filepath.Join(modules, "@modelcontextprotocol", "server-everything", "dist", "index.js")
	logs := &logBuffer{}
	opts.Logger = newTestLogger(logs)
	ctx, cancel := context.WithTimeout(context.Background(), 3*pollDeadline) // node starts slowly on a loaded machine
	defer cancel()
	c, err := mcp.Connect(ctx, mcp.Command(nodepeer.Node(t), entry, "stdio"), &opts)
	if err != nil {
		t.Fatalf("connecting to server-everything: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	if got := c.ProtocolVersion(); got != mcp.Version20251125 {
		t.Errorf("negotiated %s with server-everything, want 2025-11-25 (its newest)", got)
	}
	return c, logs
}

// Resources, prompts and completion against the reference server.
func TestEverything_ResourcesPromptsCompletion(t *testing.T) {
	t.Parallel()
	c, _ := everything(t, mcp.ClientOptions{})
	ctx := t.Context()

	var uris []string
	for r, err := range c.ListResources(ctx, nil) {
		if err != nil {
			t.Fatalf("ListResources: %v", err)
		}
		uris = append(uris, r.URI)
	}
	if !slices.Contains(uris, "demo://resource/static/document/architecture.md") {
		t.Errorf("resources %q lack the static architecture.md", uris)
	}
	var templates []string
	for rt, err := range c.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatalf("ResourceTemplates: %v", err)
		}
		templates = append(templates, rt.URITemplate)
	}
	if !slices.Contains(templates, "demo://resource/dynamic/blob/{resourceId}") {
		t.Errorf("templates %q lack the dynamic blob", templates)
	}
	res, err := c.ReadResource(ctx, "demo://resource/dynamic/text/1", nil)
	if err != nil || len(res.Contents) != 1 || !strings.HasPrefix(res.Contents[0].Text, "Resource 1:") {
		t.Errorf("read dynamic text 1 = %+v, %v", res, err)
	}
	res, err = c.ReadResource(ctx, "demo://resource/dynamic/blob/1", nil)
	if err != nil || len(res.Contents) != 1 || len(res.Contents[0].Blob) == 0 || res.Contents[0].Text != "" {
		t.Errorf("read dynamic blob 1 = %+v, %v", res, err)
	}

	got, err := c.GetPrompt(ctx, "args-prompt", map[string]string{"city": "Oslo"}, nil)
	if err != nil || len(got.Messages) != 1 || !strings.Contains(got.Messages[0].Content.Text, "Oslo") {
		t.Errorf("GetPrompt(args-prompt) = %+v, %v", got, err)
	}
	comp, err := c.Complete(ctx, mcp.CompleteRequest{Ref: mcp.PromptRef("completable-prompt"), Argument: "department", Value: "S"}, nil)
	if err != nil || !slices.Equal(comp.Values, []string{"Sales", "Support"}) {
		t.Errorf("Complete(department S) = %+v, %v", comp, err)
	}
	// The context carries an argument already chosen.
	comp, err = c.Complete(ctx, mcp.CompleteRequest{Ref: mcp.PromptRef("completable-prompt"), Argument: "name",
		Context: map[string]string{"department": "Engineering"}}, nil)
	if err != nil || !slices.Equal(comp.Values, []string{"Alice", "Bob", "Charlie"}) {
		t.Errorf("Complete(name, department Engineering) = %+v, %v", comp, err)
	}
}

// Roots changed with SetRoots reach the reference server, which asks for
// them again on notifications/roots/list_changed and logs what it got; the
// log message reaches the client's logger once SetLoggingLevel allows it.
func TestEverything_SetRootsAndServerLogs(t *testing.T) {
	t.Parallel()
	c, logs := everything(t, mcp.ClientOptions{Roots: []mcp.Root{{URI: "file:///one"}}})
	ctx := t.Context()
	if err := c.SetLoggingLevel(ctx, "info", nil); err != nil {
		t.Fatalf("SetLoggingLevel: %v", err)
	}
	if err := c.SetRoots(ctx, []mcp.Root{{URI: "file:///one"}, {URI: "file:///two"}}); err != nil {
		t.Fatalf("SetRoots: %v", err)
	}
	waitFor(t, "log of the new roots", func() bool {
		return strings.Contains(logs.String(), "Roots updated: 2 root(s) received from client")
	}, logs.String)
	if l := logs.String(); !strings.Contains(l, `msg="mcp: server log"`) || !strings.Contains(l, "logger=everything-server") {
		t.Errorf("the server's log message is not a server log line:\n%s", l)
	}
}

// The reference server's elicitation request reaches the ElicitationHandler,
// and the tool reports the answer; a decline is reported as one.
func TestEverything_Elicitation(t *testing.T) {
	t.Parallel()
	for _, action := range []string{"accept", "decline"} {
		t.Run(action, func(t *testing.T) {
			t.Parallel()
			var asked json.RawMessage
			c, _ := everything(t, mcp.ClientOptions{ElicitationHandler: func(_ context.Context, params json.RawMessage) (any, error) {
				asked = params
				if action == "decline" {
					return map[string]any{"action": "decline"}, nil
				}
				return map[string]any{"action": "accept", "content": map[string]any{"name": "Ada Lovelace", "check": true}}, nil
			}})
			res, err := c.CallTool(t.Context(), "trigger-elicitation-request", nil, nil)
			if err != nil {
				t.Fatalf("CallTool: %v", err)
			}
			var p struct {
				Message         string `json:"message"`
				RequestedSchema struct {
					Required []string `json:"required"`
				} `json:"requestedSchema"`
			}
			if err := json.Unmarshal(asked, &p); err != nil || p.Message == "" || !slices.Equal(p.RequestedSchema.Required, []string{"name"}) {
				t.Errorf("the handler was asked %s (%v)", asked, err)
			}
			text := res.Text()
			want := "- Name: Ada Lovelace"
			if action == "decline" {
				want = "User declined"
			}
			if res.IsError || !strings.Contains(text, want) {
				t.Errorf("tool result %q (isError %v), want it to contain %q", text, res.IsError, want)
			}
		})
	}
}
