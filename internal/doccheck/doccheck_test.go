package doccheck_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/andonhq/andon/internal/doccheck"
)

// module is andon's module path.
const module = "github.com/andonhq/andon"

// noExample lists the public packages that may go without an Example, each
// with the reason. A package that gains one must leave the table.
var noExample = map[string]string{
	"sqlstore/pgtest":    "its API takes a *testing.T, which an Example cannot have; sqlstore's tests show its use",
	"sqlstore/storetest": "its API takes a *testing.T, which an Example cannot have; sqlstore's conformance test shows its use",
}

// TestPublicPackagesAreDocumented runs the check on every package of the
// module that is neither a command nor internal: each gap fails it, named
// by file:line (relative to the module) and the name.
func TestPublicPackagesAreDocumented(t *testing.T) {
	root, pkgs := publicPackages(t)
	for _, want := range []string{"mcp", "agent", "node", "egress"} {
		if !slices.Contains(pkgs, want) {
			t.Fatalf("go list did not list %s among the public packages (%v): the check would read the wrong tree", want, pkgs)
		}
	}
	for rel := range noExample {
		if !slices.Contains(pkgs, rel) {
			t.Errorf("noExample lists %s, which is no public package of the module: take it out of the table", rel)
		}
	}
	for _, rel := range pkgs {
		t.Run(rel, func(t *testing.T) {
			_, exempt := noExample[rel]
			problems, err := doccheck.Dir(filepath.Join(root, rel), doccheck.Options{NoExample: exempt})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				if r, err := filepath.Rel(root, p.Pos); err == nil {
					p.Pos = r
				}
				t.Error(p)
			}
			if exempt {
				if withExample, err := doccheck.Dir(filepath.Join(root, rel), doccheck.Options{}); err == nil && len(withExample) == len(problems) {
					t.Errorf("%s has an Example now: take it out of the noExample table", rel)
				}
			}
		})
	}
}

// publicPackages returns the module's root directory and its packages that
// are neither commands nor internal, relative to the module.
func publicPackages(t *testing.T) (string, []string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "list", "-f", "{{.Module.Dir}}\t{{.ImportPath}}\t{{.Name}}", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var root string
	var pkgs []string
	for line := range strings.Lines(string(out)) {
		dir, rest, _ := strings.Cut(strings.TrimSpace(line), "\t")
		path, name, _ := strings.Cut(rest, "\t")
		root = dir
		rel, ok := strings.CutPrefix(path, module+"/")
		if !ok || name == "main" || rel == "internal" || strings.HasPrefix(rel, "internal/") || strings.Contains(rel, "/internal/") || strings.HasSuffix(rel, "/internal") {
			continue
		}
		pkgs = append(pkgs, rel)
	}
	return root, pkgs
}

// Dir names each kind of gap, by file:line and name, and nothing that is
// documented, unexported, a field, or a method of an unexported type.
func TestDirNamesEachGap(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.go", `package a

type Undocumented struct {
	Field int // fields need no doc comment
}

func (Undocumented) Method() {}

// Documented is documented.
func (*Undocumented) Documented() {}

func Func() {}

const Const = 1

var (
	VarInGroup = 2
	other      = 3
)

// Grouped is a documented group: its doc covers its members.
const (
	First = iota
	Second
)

type Generic[T any] struct{}

func (g *Generic[T]) Method() {}

type hidden struct{}

func (hidden) Method() {}

func unexported() {}

type (
	// InGroup has its own doc.
	InGroup int
	NotInGroup int
)

type Iface interface {
	Method() // interface methods need no doc comment
}
`)
	write(t, dir, "b_test.go", "package a\n\nfunc TestA() {}\n")

	problems, err := doccheck.Dir(dir, doccheck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, strings.TrimPrefix(p.Pos, dir+string(filepath.Separator))+" "+p.Name)
	}
	want := []string{
		"a.go:3 Undocumented",
		"a.go:7 Undocumented.Method",
		"a.go:12 Func",
		"a.go:14 Const",
		"a.go:17 VarInGroup",
		"a.go:27 Generic",
		"a.go:29 Generic.Method",
		"a.go:40 NotInGroup",
		"a.go:43 Iface",
		dir + " a", // no package comment
		dir + " a", // no Example
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(problems[len(problems)-2].What, "package comment") || !strings.Contains(problems[len(problems)-1].What, "Example") {
		t.Errorf("the package-wide problems do not say what is missing: %v", problems[len(problems)-2:])
	}

	// With an Example and a package comment, and Options.NoExample.
	write(t, dir, "doc.go", "// Package a is a fixture.\npackage a\n")
	write(t, dir, "b_test.go", "package a_test\n\nfunc Example() {}\n")
	problems, err = doccheck.Dir(dir, doccheck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != len(want)-2 {
		t.Errorf("with a package comment and an Example: %d problems, want %d: %v", len(problems), len(want)-2, problems)
	}
	os.Remove(filepath.Join(dir, "b_test.go"))
	if problems, err = doccheck.Dir(dir, doccheck.Options{NoExample: true}); err != nil || len(problems) != len(want)-2 {
		t.Errorf("NoExample without an Example: %v, %v; want %d problems", problems, err, len(want)-2)
	}
}

// Dir refuses a directory with no package rather than passing it.
func TestDirRefusesAnEmptyDirectory(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "x_test.go", "package x\n")
	if _, err := doccheck.Dir(dir, doccheck.Options{}); err == nil {
		t.Error("Dir passed a directory with only a test file")
	}
}

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}
