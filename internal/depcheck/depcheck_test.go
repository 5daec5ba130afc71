package depcheck_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/andonhq/andon/internal/depcheck"
)

// TestModuleFollowsTheDependencyRule checks the module's own package graph:
// any upward import, database driver outside the store, HTTP code in the
// store or test code in the andon binary fails it, naming the edge.
func TestModuleFollowsTheDependencyRule(t *testing.T) {
	pkgs := goList(t)
	if !slices.ContainsFunc(pkgs, func(p depcheck.Package) bool { return p.ImportPath == depcheck.Module+"/sqlstore" }) {
		t.Fatalf("go list did not list sqlstore: the graph read is not the module's (%d packages)", len(pkgs))
	}
	found := depcheck.Check(pkgs)
	for _, rule := range []string{depcheck.RuleDirection, depcheck.RuleDrivers, depcheck.RuleStoreHTTP, depcheck.RuleNoTesting, depcheck.RuleOTelAPI} {
		t.Run(rule, func(t *testing.T) {
			for _, v := range found {
				if v.Rule == rule {
					t.Error(v.Edge)
				}
			}
		})
	}
}

// goList returns the module's package graph, its tests left out.
func goList(t *testing.T) []depcheck.Package {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "list", "-deps", "-json=ImportPath,Name,Imports", depcheck.Module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []depcheck.Package
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p depcheck.Package
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs
		} else if err != nil {
			t.Fatalf("go list's output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
}

// Check names each kind of violation by its edge or its chain, and passes
// a graph that keeps the rule.
func TestCheckNamesTheViolation(t *testing.T) {
	const m = depcheck.Module + "/"
	clean := []depcheck.Package{
		{ImportPath: m + "cmd/andon", Name: "main", Imports: []string{m + "api", m + "sqlstore", m + "mcp", "github.com/jackc/pgx/v5"}},
		{ImportPath: m + "api", Imports: []string{m + "agent", m + "token", m + "metrics", "net/http"}},
		{ImportPath: m + "metrics", Imports: []string{m + "agent", "github.com/prometheus/client_golang/prometheus"}},
		{ImportPath: m + "sqlstore", Imports: []string{m + "agent", m + "token", "github.com/jackc/pgx/v5", "modernc.org/sqlite"}},
		{ImportPath: m + "sqlstore/storetest", Imports: []string{m + "sqlstore", "testing"}},
		{ImportPath: m + "agent", Imports: []string{m + "model"}},
		{ImportPath: m + "model/script", Imports: []string{m + "model"}},
		{ImportPath: m + "model"},
		{ImportPath: m + "mcp/mcptest", Imports: []string{m + "mcp", m + "mcp/internal/jsonrpc", "testing"}},
		{ImportPath: m + "mcp", Imports: []string{m + "mcp/internal/jsonrpc", "net/http"}},
		{ImportPath: m + "mcp/internal/jsonrpc"},
		{ImportPath: m + "token"},
		{ImportPath: "github.com/jackc/pgx/v5", Imports: []string{"github.com/jackc/pgx/v5/pgconn"}},
		{ImportPath: "github.com/jackc/pgx/v5/pgconn", Imports: []string{"net"}},
		{ImportPath: "modernc.org/sqlite"},
		{ImportPath: "github.com/prometheus/client_golang/prometheus", Imports: []string{"github.com/prometheus/common/expfmt", "net/http"}},
		{ImportPath: "github.com/prometheus/common/expfmt"},
		{ImportPath: "net/http", Imports: []string{"net"}},
		{ImportPath: "net"},
		{ImportPath: "testing"},
	}
	if v := depcheck.Check(clean); len(v) != 0 {
		t.Fatalf("a graph that keeps the rule: %q", v)
	}
	for name, tc := range map[string]struct {
		change func(pkgs []depcheck.Package) []depcheck.Package
		rule   string
		want   string
	}{
		"storage imports the API": {
			addImport(m+"sqlstore", m+"api"),
			depcheck.RuleDirection, "sqlstore → api: an upward or sideways import; sqlstore may import only its own packages and token, agent, catalogue, vault, audit",
		},
		"storage links Prometheus": {
			addImport(m+"agent", "github.com/prometheus/client_golang/prometheus"),
			depcheck.RuleStoreHTTP, "sqlstore links github.com/prometheus/client_golang/prometheus (sqlstore → agent → github.com/prometheus/client_golang/prometheus)",
		},
		"storage imports the metrics": {
			addImport(m+"sqlstore", m+"metrics"),
			depcheck.RuleStoreHTTP, "sqlstore links metrics (sqlstore → metrics)",
		},
		"storage imports net/http": {
			addImport(m+"sqlstore", "net/http"),
			depcheck.RuleStoreHTTP, "sqlstore → net/http",
		},
		"the runtime imports its store": {
			addImport(m+"agent", m+"sqlstore"),
			depcheck.RuleDirection, "agent → sqlstore: an upward or sideways import",
		},
		"a domain package imports a driver": {
			addImport(m+"model/script", "modernc.org/sqlite"),
			depcheck.RuleDrivers, "model/script → modernc.org/sqlite: only sqlstore and cmd import a database driver",
		},
		"a domain package links a driver": {
			addImport(m+"api", m+"sqlstore"),
			depcheck.RuleDrivers, "api links the database driver github.com/jackc/pgx/v5 (api → sqlstore → github.com/jackc/pgx/v5): no domain package links one",
		},
		"mcp imports the rest of andon": {
			addImport(m+"mcp", m+"token"),
			depcheck.RuleDirection, "mcp → token: an upward or sideways import; mcp may import only its own packages",
		},
		"mcp links the OpenTelemetry SDK": {
			func(pkgs []depcheck.Package) []depcheck.Package {
				pkgs = addImport(m+"mcp/internal/jsonrpc", "go.opentelemetry.io/otel/sdk/trace")(pkgs)
				return append(pkgs, depcheck.Package{ImportPath: "go.opentelemetry.io/otel/sdk/trace", Imports: []string{"go.opentelemetry.io/otel/sdk/resource"}},
					depcheck.Package{ImportPath: "go.opentelemetry.io/otel/sdk/resource"})
			},
			depcheck.RuleOTelAPI, "mcp links go.opentelemetry.io/otel/sdk/trace (mcp → mcp/internal/jsonrpc → go.opentelemetry.io/otel/sdk/trace)",
		},
		"the binary links testing": {
			addImport(m+"cmd/andon", m+"mcp/mcptest"),
			depcheck.RuleNoTesting, "cmd/andon links testing (cmd/andon → mcp/mcptest → testing)",
		},
		"a package the table does not know": {
			func(pkgs []depcheck.Package) []depcheck.Package {
				return append(pkgs, depcheck.Package{ImportPath: m + "util"})
			},
			depcheck.RuleDirection, "util is in no row of the dependency table",
		},
	} {
		t.Run(name, func(t *testing.T) {
			v := depcheck.Check(tc.change(slices.Clone(clean)))
			if !slices.ContainsFunc(v, func(v depcheck.Violation) bool { return v.Rule == tc.rule && strings.Contains(v.Edge, tc.want) }) {
				t.Fatalf("violations = %q; want one of %q saying %q", v, tc.rule, tc.want)
			}
		})
	}
}

// addImport returns a change to a graph: from imports to too.
func addImport(from, to string) func([]depcheck.Package) []depcheck.Package {
	return func(pkgs []depcheck.Package) []depcheck.Package {
		for i := range pkgs {
			if pkgs[i].ImportPath == from {
				pkgs[i].Imports = append(slices.Clone(pkgs[i].Imports), to)
			}
		}
		return pkgs
	}
}
