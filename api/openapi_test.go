package api_test

import (
	"encoding/json"
	"github.com/andonhq/andon/catalogue"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/andonhq/andon/api"
)

// openAPIDoc is the part of an OpenAPI document the tests read.
type openAPIDoc struct {
	OpenAPI    string                                `json:"openapi"`
	Paths      map[string]map[string]openAPIOp       `json:"paths"`
	Components map[string]map[string]json.RawMessage `json:"components"`
}

type openAPIOp struct {
	OperationID string                     `json:"operationId"`
	Role        string                     `json:"x-andon-role"`
	Security    *[]map[string][]string     `json:"security"`
	Responses   map[string]json.RawMessage `json:"responses"`
}

// fetchOpenAPI gets the document the server serves, without a token.
func fetchOpenAPI(t *testing.T, f *fixture) (openAPIDoc, []byte) {
	t.Helper()
	status, header, body := f.request("GET", "/v1/openapi.json", "", "")
	if status != http.StatusOK || header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /v1/openapi.json: %d %s", status, header.Get("Content-Type"))
	}
	var doc openAPIDoc
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("the OpenAPI document is not JSON: %v", err)
	}
	return doc, body
}

// TestOpenAPIListsEveryRoute: every route registered on the API's mux is in
// the OpenAPI document, with the role it really needs, so the document
// cannot drift from the code. (The console's pages and files, outside /v1/
// and /metrics, are not API and need not be listed.)
func TestOpenAPIListsEveryRoute(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true, tokens: true})
	doc, _ := fetchOpenAPI(t, f)
	h, err := api.NewHandler(api.Config{Runtime: f.rt, Store: f.store, Catalogue: emptyCatalogue(t)})
	if err != nil {
		t.Fatal(err)
	}
	routes := api.Routes(h)
	if len(routes) == 0 {
		t.Fatal("no routes registered")
	}
	for pattern, least := range routes {
		method, path, ok := strings.Cut(pattern, " ")
		if !ok {
			t.Errorf("route %q has no method", pattern)
			continue
		}
		if !strings.HasPrefix(path, "/v1/") && path != "/metrics" {
			continue
		}
		op, ok := doc.Paths[path][strings.ToLower(method)]
		if !ok {
			t.Errorf("route %s is not in the OpenAPI document", pattern)
			continue
		}
		wantRole := string(least)
		if least == "" {
			wantRole = "anyone"
		}
		if op.Role != wantRole {
			t.Errorf("%s: the document says role %q, the route needs %q", pattern, op.Role, wantRole)
		}
		public := op.Security != nil && len(*op.Security) == 0
		if public != (least == "") {
			t.Errorf("%s: the document's security (public %v) disagrees with the route (role %q)", pattern, public, least)
		}
	}
}

// TestOpenAPIDocument: the document is OpenAPI 3.1, every operation has a
// unique id and responses, every protected one documents 401 and 403, and
// every $ref names a component that exists. It also lists the routes of
// the servers, tools, events and metrics, which other files serve.
func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	f := newFixture(t, options{idle: true})
	doc, body := fetchOpenAPI(t, f)
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q, want 3.1.0", doc.OpenAPI)
	}
	ids := map[string]bool{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			if op.OperationID == "" || ids[op.OperationID] {
				t.Errorf("%s %s: operationId %q missing or repeated", method, path, op.OperationID)
			}
			ids[op.OperationID] = true
			if len(op.Responses) == 0 {
				t.Errorf("%s %s: no responses", method, path)
			}
			if op.Role != "anyone" && (op.Responses["401"] == nil || op.Responses["403"] == nil) {
				t.Errorf("%s %s: a protected operation must document 401 and 403", method, path)
			}
		}
	}
	for _, want := range []string{"get /v1/servers", "post /v1/servers/{name}/import", "get /v1/tools", "patch /v1/tools/{name}",
		"get /v1/events", "get /metrics", "get /v1/audit", "get /v1/ready"} {
		method, path, _ := strings.Cut(want, " ")
		if _, ok := doc.Paths[path][method]; !ok {
			t.Errorf("the document does not describe %s", want)
		}
	}
	var all any
	json.Unmarshal(body, &all)
	for _, ref := range refs(all) {
		parts := strings.Split(strings.TrimPrefix(ref, "#/components/"), "/")
		if !strings.HasPrefix(ref, "#/components/") || len(parts) != 2 || doc.Components[parts[0]][parts[1]] == nil {
			t.Errorf("$ref %q names nothing", ref)
		}
	}
}

// refs returns every $ref in a decoded JSON value.
func refs(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && k == "$ref" {
				out = append(out, s)
			}
			out = append(out, refs(x)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, refs(x)...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// emptyCatalogue is a catalogue of no servers, so that a handler registers
// the servers and tools routes.
func emptyCatalogue(t *testing.T) *catalogue.Catalogue {
	t.Helper()
	cat, err := catalogue.New(&catalogue.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	return cat
}
