package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The andon binary must not link the testing package: it would bring the
// test framework's init (and its flags' machinery) into production, and it
// means test-only code leaked into what ships. mcptest, which "andon mcptest
// serve" embeds, is the package most likely to let it in.
func TestBinaryDoesNotLinkTesting(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	var importers []string
	for line := range strings.Lines(string(out)) {
		pkg, imports, _ := strings.Cut(strings.TrimSpace(line), " ")
		for imp := range strings.FieldsSeq(imports) {
			if isTestingPackage(imp) && !isTestingPackage(pkg) {
				importers = append(importers, pkg+" imports "+imp)
			}
		}
	}
	if len(importers) > 0 {
		t.Errorf("the andon binary links the testing package:\n\t%s", strings.Join(importers, "\n\t"))
	}
}

// isTestingPackage reports whether path is testing or one of its helpers
// (testing/fstest, testing/iotest, …), all of which import it.
func isTestingPackage(path string) bool {
	return path == "testing" || strings.HasPrefix(path, "testing/")
}
