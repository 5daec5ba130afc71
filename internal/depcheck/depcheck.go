// Package depcheck is andon's dependency rule as a checked table: DESIGN.md's
// "dependencies point down only" — cmd → assembly → api → {agent,
// catalogue} → {model, mcp, egress} → {vault, audit} — with the store beside
// the assembly, implementing what the domain declares. [Check] reads a
// package graph (as `go list -deps -json` prints it) and names every edge
// that breaks the rule; this package's test runs it on the module, so that
// `go test ./...`, and with it .ci/run, fails on a violation.
//
// The rule has five parts:
//   - an andon package imports only the andon packages its row of
//     [mayImport] lists, or packages of its own row's tree;
//   - only sqlstore and cmd import a database driver, and only they and the
//     assembly link one;
//   - sqlstore imports no HTTP code: not net/http, and it links neither the
//     API, nor the metrics, nor Prometheus, nor an HTTP test server;
//   - a program under cmd does not link package testing;
//   - the mcp library links only the OpenTelemetry API (trace,
//     propagation), never its SDK, an exporter or contrib code: an
//     embedder brings those.
package depcheck

import (
	"fmt"
	"slices"
	"strings"
)

// Module is andon's module path.
const Module = "github.com/andonhq/andon"

// mayImport is the table of allowed edges: a row names a package of the
// module, relative to it, and the andon packages it may import. A row
// covers the packages below it, unless a longer row names them; a package
// may always import packages of its own row's tree (mcp/mcptest → mcp). An
// entry covers the packages below it too (model covers model/script). A
// package of the module in no row fails the check: a new package takes its
// place in the table deliberately.
var mayImport = map[string][]string{
	"cmd/andon-load": {"internal/loadtest", "sqlstore", "agent"},
	"cmd":            {"node", "gateway", "tracing", "api", "metrics", "token", "sqlstore", "agent", "catalogue", "model", "mcp", "egress", "vault", "audit"},
	"node":           {"gateway", "tracing", "api", "metrics", "token", "sqlstore", "agent", "catalogue", "model", "mcp", "egress", "vault", "audit"},
	"api":            {"metrics", "token", "agent", "catalogue", "model", "mcp", "egress", "vault", "audit"},
	"gateway":        {"agent", "catalogue", "mcp"},
	"metrics":        {"agent", "catalogue"},
	"sqlstore":       {"token", "agent", "catalogue", "vault", "audit"},
	"catalogue":      {"agent", "model", "mcp", "egress", "vault", "audit"},
	"agent":          {"model", "mcp", "egress", "vault", "audit"},
	"model":          {"vault", "audit"},
	"egress":         {"vault", "audit"},
	"mcp":            nil, // the public MCP client library: nothing of andon's but its own
	"vault":          nil,
	"audit":          nil,
	"token":          nil,
	"tracing":        nil, // the OpenTelemetry SDK set up from the environment

	"internal/conformance": {"mcp"},
	// The gateway's interop matrix assembles a node (its tests only).
	"internal/interop":   {"node", "gateway", "agent", "catalogue", "mcp", "egress", "vault", "audit", "internal/nodepeer"},
	"internal/nodepeer":  nil,
	"internal/oauthtest": {"mcp", "internal/nodepeer"},
	"internal/depcheck":  nil,
	"internal/otlptest":  nil, // a loopback OTLP/HTTP receiver for tests
	"internal/doccheck":  nil,
	// The load harness assembles a node on a counted store, as a program
	// embedding andon would (cmd/andon-load drives it), or drives andon
	// serve across processes through the API's client.
	"internal/loadtest": {"node", "api", "sqlstore", "agent", "catalogue", "mcp", "vault"},
}

// drivers are the import paths (and path prefixes, ending in /) of the
// database drivers andon uses or might: only the store talks to a database.
var drivers = []string{
	"github.com/jackc/pgx/",
	"modernc.org/sqlite",
	"github.com/riverqueue/river/riverdriver/",
	"github.com/lib/pq",
	"github.com/mattn/go-sqlite3",
}

// driverImporters may import a driver; driverLinkers may also link one
// through them (the assembly opens the store).
var (
	driverImporters = []string{"sqlstore", "cmd"}
	driverLinkers   = []string{"sqlstore", "cmd", "node", "internal/loadtest"}
)

// httpCode is what sqlstore may not link: the HTTP layer above it (the API,
// the metrics and Prometheus) and HTTP test and debug servers. It links
// net/http itself, through the domain it implements (egress, vault), so
// the rule for net/http is that sqlstore does not import it.
var httpCode = []string{
	Module + "/api",
	Module + "/metrics",
	"github.com/prometheus/",
	"net/http/httptest",
	"net/http/pprof",
}

// Package is what the check reads of one package of `go list -json`.
type Package struct {
	ImportPath string
	Name       string
	Imports    []string // its own imports, not its tests'
}

// The parts of the rule, as a [Violation] names them.
const (
	RuleDirection = "dependencies point down only"
	RuleDrivers   = "only the store uses a database driver"
	RuleStoreHTTP = "sqlstore imports no HTTP code"
	RuleNoTesting = "a program links no test code"
	RuleOTelAPI   = "the mcp library links only the OpenTelemetry API"
)

// otelSDK is what the mcp library may not link: the OpenTelemetry SDK,
// its exporters and contrib code, and the OTLP protocol types.
var otelSDK = []string{
	"go.opentelemetry.io/otel/sdk",
	"go.opentelemetry.io/otel/exporters/",
	"go.opentelemetry.io/contrib/",
	"go.opentelemetry.io/proto/",
}

// Violation is one break of the rule.
type Violation struct {
	// Rule is the part of the rule broken: one of the Rule constants.
	Rule string
	// Edge says what breaks it: the import, or the chain of imports.
	Edge string
}

func (v Violation) String() string { return v.Edge + " (" + v.Rule + ")" }

// Check returns every violation of the rule in pkgs, a package graph as
// `go list -deps -json` prints it: the module's packages and everything
// they import. Each violation names the edge, or the chain of imports, that
// breaks the rule, and the rule it breaks.
func Check(pkgs []Package) []Violation {
	byPath := make(map[string]*Package, len(pkgs))
	for i := range pkgs {
		byPath[pkgs[i].ImportPath] = &pkgs[i]
	}
	var out []Violation
	for _, p := range pkgs {
		rel, ok := relative(p.ImportPath)
		if !ok {
			continue
		}
		row, ok := rowOf(rel)
		if !ok {
			out = append(out, Violation{RuleDirection, rel + " is in no row of the dependency table (internal/depcheck): add it where DESIGN.md puts it"})
			continue
		}
		for _, imp := range p.Imports {
			if to, ok := relative(imp); ok && !within(to, row) && !slices.ContainsFunc(mayImport[row], func(e string) bool { return within(to, e) }) {
				out = append(out, Violation{RuleDirection, fmt.Sprintf("%s → %s: an upward or sideways import; %s may import only %s",
					rel, to, row, list(mayImport[row]))})
			}
			if isDriver(imp) && !inAny(rel, driverImporters) {
				out = append(out, Violation{RuleDrivers, fmt.Sprintf("%s → %s: only sqlstore and cmd import a database driver", rel, imp)})
			}
		}
		reach := reachable(byPath, p.ImportPath)
		if !inAny(rel, driverLinkers) {
			for _, d := range sortedKeys(reach) {
				if isDriver(d) && !isDriver(reach[d]) && !slices.Contains(p.Imports, d) {
					out = append(out, Violation{RuleDrivers, fmt.Sprintf("%s links the database driver %s (%s): no domain package links one; only sqlstore, cmd and the assembly do",
						rel, d, chain(reach, p.ImportPath, d))})
				}
			}
		}
		if within(rel, "sqlstore") {
			if slices.Contains(p.Imports, "net/http") {
				out = append(out, Violation{RuleStoreHTTP, rel + " → net/http"})
			}
			for _, d := range sortedKeys(reach) {
				if isHTTPCode(d) && !isHTTPCode(reach[d]) {
					out = append(out, Violation{RuleStoreHTTP, fmt.Sprintf("%s links %s (%s)", rel, short(d), chain(reach, p.ImportPath, d))})
				}
			}
		}
		if within(rel, "mcp") {
			for _, d := range sortedKeys(reach) {
				if isOTelSDK(d) && !isOTelSDK(reach[d]) {
					out = append(out, Violation{RuleOTelAPI, fmt.Sprintf("%s links %s (%s)", rel, d, chain(reach, p.ImportPath, d))})
				}
			}
		}
		if within(rel, "cmd") && p.Name == "main" {
			if _, ok := reach["testing"]; ok {
				out = append(out, Violation{RuleNoTesting, fmt.Sprintf("%s links testing (%s)", rel, chain(reach, p.ImportPath, "testing"))})
			}
		}
	}
	return out
}

// relative returns path relative to the module, if it is in it.
func relative(path string) (string, bool) {
	if path == Module {
		return ".", true
	}
	rel, ok := strings.CutPrefix(path, Module+"/")
	return rel, ok
}

// rowOf returns the longest row of mayImport that is rel or a parent of it.
func rowOf(rel string) (string, bool) {
	best := ""
	for row := range mayImport {
		if within(rel, row) && len(row) > len(best) {
			best = row
		}
	}
	return best, best != ""
}

// within reports whether rel is dir or below it.
func within(rel, dir string) bool { return rel == dir || strings.HasPrefix(rel, dir+"/") }

func inAny(rel string, dirs []string) bool {
	return slices.ContainsFunc(dirs, func(d string) bool { return within(rel, d) })
}

// hasPathPrefix reports whether path is prefix, or below it if prefix ends
// in a slash.
func hasPathPrefix(path, prefix string) bool {
	if strings.HasSuffix(prefix, "/") {
		return strings.HasPrefix(path, prefix) || path == strings.TrimSuffix(prefix, "/")
	}
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

func isDriver(path string) bool {
	return slices.ContainsFunc(drivers, func(d string) bool { return hasPathPrefix(path, d) })
}

func isOTelSDK(path string) bool {
	return slices.ContainsFunc(otelSDK, func(h string) bool { return hasPathPrefix(path, h) })
}

func isHTTPCode(path string) bool {
	return slices.ContainsFunc(httpCode, func(h string) bool { return hasPathPrefix(path, h) })
}

// reachable returns every package from links, each with the package that
// imports it on a shortest chain from from. Only the first package of a
// forbidden tree on that chain is reported, not each package below it.
func reachable(pkgs map[string]*Package, from string) map[string]string {
	via := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		node, ok := pkgs[p]
		if !ok {
			continue
		}
		for _, imp := range node.Imports {
			if _, seen := via[imp]; !seen {
				via[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	delete(via, from)
	return via
}

// chain spells the imports from from to to, module paths shortened.
func chain(via map[string]string, from, to string) string {
	steps := []string{to}
	for p := via[to]; p != "" && p != from; p = via[p] {
		steps = append(steps, p)
	}
	steps = append(steps, from)
	slices.Reverse(steps)
	for i, s := range steps {
		steps[i] = short(s)
	}
	return strings.Join(steps, " → ")
}

// short is path relative to the module if it is in it.
func short(path string) string {
	if rel, ok := relative(path); ok {
		return rel
	}
	return path
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func list(entries []string) string {
	if len(entries) == 0 {
		return "its own packages"
	}
	return "its own packages and " + strings.Join(entries, ", ")
}
