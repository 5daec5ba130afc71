package nodepeer_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/andonhq/andon/internal/nodepeer"
)

// TestInstallPinsTheVersion installs the reference server and checks that
// what npm put in the cache is the pinned version, and that a second call
// finds it there.
func TestInstallPinsTheVersion(t *testing.T) {
	modules := nodepeer.Install(t, nodepeer.ServerEverything)
	name, version, _ := strings.Cut(strings.TrimPrefix(nodepeer.ServerEverything, "@"), "@")
	raw, err := os.ReadFile(filepath.Join(modules, "@"+name, "package.json"))
	if err != nil {
		t.Fatalf("the installed package: %v", err)
	}
	var pkg struct{ Version string }
	if err := json.Unmarshal(raw, &pkg); err != nil {
		t.Fatal(err)
	}
	if pkg.Version != version {
		t.Fatalf("installed %s, pinned %s", pkg.Version, version)
	}
	if again := nodepeer.Install(t, nodepeer.ServerEverything); again != modules {
		t.Fatalf("a second install went to %s, not %s", again, modules)
	}
}
