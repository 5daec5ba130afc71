// Package doccheck keeps `go doc` worth reading for andon's public
// packages: every exported name has a doc comment, every package has a
// package comment, and every package has an Example that go test runs.
// [Dir] reads one package's directory with go/parser and go/ast and names
// what is missing, by file:line; this package's test runs it on every
// package of the module that is neither a command nor internal, so that
// `go test ./...`, and with it .ci/run, fails on a gap.
//
// What needs a doc comment is what golint asked for: exported types,
// functions, methods of exported types, constants and variables. The doc
// comment of a grouped declaration, const ( … ) or var ( … ), covers the
// names in the group. Exported struct fields and interface methods are
// not required to have one (most do).
package doccheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Problem is one gap: a name without a doc comment, or a package without
// a package comment or an Example.
type Problem struct {
	// Pos is where: the declaration's file and line, or for a package-wide
	// gap the package's directory.
	Pos string
	// Name is the name at fault, or the package's for a package-wide gap.
	Name string
	// What says what is missing.
	What string
}

func (p Problem) String() string { return p.Pos + ": " + p.Name + ": " + p.What }

// Options says what Dir may let pass.
type Options struct {
	// NoExample lets a package go without an Example, for a package whose
	// API cannot run outside a test (it takes a *testing.T). False means
	// an Example is required.
	NoExample bool
}

// Dir checks the package in dir: its non-test files for doc comments, its
// test files for an Example. Paths in the problems are dir's joined with
// the file's name. It returns an error, and no problems, if a file does
// not parse or dir holds no package.
func Dir(dir string, opts Options) ([]Problem, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("doccheck: %w", err)
	}
	fset := token.NewFileSet()
	var (
		out         []Problem
		pkg         string
		hasPkgDoc   bool
		hasExample  bool
		sourceFiles int
	)
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") {
			continue
		}
		path := filepath.Join(dir, name)
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("doccheck: %w", err)
		}
		if strings.HasSuffix(name, "_test.go") {
			hasExample = hasExample || slices.ContainsFunc(f.Decls, isExample)
			continue
		}
		if ignored(f) {
			continue
		}
		sourceFiles++
		pkg = f.Name.Name
		hasPkgDoc = hasPkgDoc || f.Doc != nil
		out = append(out, undocumented(fset, f)...)
	}
	if sourceFiles == 0 {
		return nil, fmt.Errorf("doccheck: %s holds no Go package to check (its non-test files)", dir)
	}
	if !hasPkgDoc {
		out = append(out, Problem{dir, pkg, "no package comment: one file says what the package is for, in a comment just above its package clause"})
	}
	if !hasExample && !opts.NoExample {
		out = append(out, Problem{dir, pkg, "no Example: add a func Example… to an _test.go file that uses the package as a user would (with // Output: where the output is deterministic)"})
	}
	return out, nil
}

// undocumented returns the exported names of f's declarations that lack
// a doc comment.
func undocumented(fset *token.FileSet, f *ast.File) []Problem {
	var out []Problem
	missing := func(pos token.Pos, name, kind string) {
		p := fset.Position(pos)
		out = append(out, Problem{fmt.Sprintf("%s:%d", p.Filename, p.Line), name,
			"exported " + kind + " without a doc comment"})
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() || d.Doc != nil {
				continue
			}
			if d.Recv == nil {
				missing(d.Pos(), d.Name.Name, "func")
			} else if recv := receiver(d.Recv); ast.IsExported(recv) {
				missing(d.Pos(), recv+"."+d.Name.Name, "method")
			}
		case *ast.GenDecl:
			if d.Tok == token.IMPORT || d.Doc != nil {
				continue // a group's doc covers its members
			}
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() && s.Doc == nil {
						missing(s.Pos(), s.Name.Name, "type")
					}
				case *ast.ValueSpec:
					if s.Doc != nil {
						continue
					}
					for _, n := range s.Names {
						if n.IsExported() {
							missing(n.Pos(), n.Name, strings.ToLower(d.Tok.String()))
							break // one problem per line of names
						}
					}
				}
			}
		}
	}
	return out
}

// receiver returns the name of a method's receiver type, without its
// pointer or its type parameters.
func receiver(fields *ast.FieldList) string {
	if fields == nil || len(fields.List) == 0 {
		return ""
	}
	t := fields.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// isExample reports whether d is an example go test runs or compiles:
// func Example, ExampleName or ExampleName_suffix, without parameters or
// results.
func isExample(d ast.Decl) bool {
	fn, ok := d.(*ast.FuncDecl)
	if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Example") {
		return false
	}
	return fn.Type.Params.NumFields() == 0 && fn.Type.Results.NumFields() == 0
}

// ignored reports whether f is built by no one: //go:build ignore.
func ignored(f *ast.File) bool {
	for _, g := range f.Comments {
		if g.Pos() > f.Package {
			break
		}
		for _, c := range g.List {
			if strings.TrimSpace(c.Text) == "//go:build ignore" {
				return true
			}
		}
	}
	return false
}
