package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var tokenRE = regexp.MustCompile(`^andon_[A-Za-z0-9_-]{43}$`)

// TestTokenCommands: token create prints the token, and only it, on
// stdout, once; list shows ids, names, roles and revocations but no token;
// revoke revokes; the database and the audit log hold no token; bad input
// is a usage error.
func TestTokenCommands(t *testing.T) {
	t.Parallel()
	d := newStoreDir(t)
	r := d.andon(t, "", "token", "create", "--name", "alice", "--role", "operator")
	r.want(t, exitOK, "created for alice (operator)")
	alice := strings.TrimSpace(r.stdout)
	if !tokenRE.MatchString(alice) || r.stdout != alice+"\n" {
		t.Fatalf("token create stdout %q, want exactly one token line", r.stdout)
	}
	if strings.Contains(r.stderr, alice) {
		t.Error("token create printed the token on stderr")
	}
	id := regexp.MustCompile(`tok_[0-9a-f]{16}`).FindString(r.stderr)
	if id == "" {
		t.Fatalf("token create does not name the token's id: %q", r.stderr)
	}
	r = d.andon(t, "", "token", "create", "--name", "vic", "--role", "viewer")
	r.want(t, exitOK, "")
	vic := strings.TrimSpace(r.stdout)
	if vic == alice {
		t.Fatal("two tokens are the same")
	}

	r = d.andon(t, "", "token", "list")
	r.want(t, exitOK, "")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], id) || !strings.Contains(lines[1], "alice") ||
		!strings.Contains(lines[1], "operator") || !strings.Contains(lines[2], "vic") || !strings.Contains(lines[2], "viewer") {
		t.Fatalf("token list:\n%s", r.stdout)
	}
	if fields := strings.Fields(lines[1]); fields[len(fields)-1] != "-" {
		t.Errorf("a new token shows as revoked: %q", lines[1])
	}

	d.andon(t, "", "token", "revoke", id).want(t, exitOK, "token "+id+" revoked")
	r = d.andon(t, "", "token", "list")
	for line := range strings.SplitSeq(r.stdout, "\n") {
		if strings.Contains(line, id) && strings.HasSuffix(strings.TrimSpace(line), "-") {
			t.Errorf("the revoked token does not show a revocation time: %q", line)
		}
	}
	d.andon(t, "", "token", "revoke", "tok_nosuchtoken").want(t, exitFailure, `no token "tok_nosuchtoken"`)

	for _, args := range [][]string{
		{"token", "create", "--name", "bob"},
		{"token", "create", "--role", "admin"},
		{"token", "create", "--name", "bob", "--role", "root"},
		{"token", "create", "--name", "bob smith", "--role", "admin"},
		{"token", "revoke"},
		{"token", "frobnicate"},
	} {
		if r := d.andon(t, "", args...); r.code != exitUsage {
			t.Errorf("andon %v: exit %d, want %d; stderr %q", args, r.code, exitUsage, r.stderr)
		}
	}

	// The audit log records the changes, by id and name.
	r = d.andon(t, "", "audit", "list")
	r.want(t, exitOK, "")
	if !strings.Contains(r.stdout, "token_created") || !strings.Contains(r.stdout, "token_revoked") || !strings.Contains(r.stdout, id) {
		t.Errorf("audit list does not show the token changes:\n%s", r.stdout)
	}
	// No token anywhere: not in the audit rows, not in the database file.
	db, err := os.ReadFile(d.db)
	if err != nil {
		t.Fatal(err)
	}
	wal, _ := os.ReadFile(d.db + "-wal")
	for _, secret := range []string{alice, vic} {
		if strings.Contains(r.stdout, secret) || bytes.Contains(db, []byte(secret)) || bytes.Contains(wal, []byte(secret)) {
			t.Error("a token is stored or printed in the clear")
		}
	}
}

// TestServeBootstrapToken: serve's first start writes an admin token to
// andon.token (mode 0600) without printing it; the API commands in that
// directory use it; elsewhere they need --token or ANDON_TOKEN, and say
// so; a viewer may read but not cancel; a revoked token stops working; a
// second start writes no new token.
func TestServeBootstrapToken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := filepath.Join(dir, "records.jsonl")
	p := startServe(t, dir, testConfig(rec, false))
	path := filepath.Join(dir, "andon.token")
	info, err := os.Stat(path)
	if err != nil {
		t.Fatalf("serve wrote no token file: %v\n%s", err, p.stderr.String())
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("andon.token has mode %v, want 0600", info.Mode().Perm())
	}
	token := readToken(t, dir)
	if !tokenRE.MatchString(token) {
		t.Fatalf("andon.token holds %q, want a token", token)
	}
	// serve is healthy (it listens first) and writes the file before it
	// stores the token and says so: wait for the line.
	said := func() bool {
		return strings.Contains(p.stderr.String(), "created the first API token") && strings.Contains(p.stderr.String(), "andon.token")
	}
	for deadline := time.Now().Add(patience); !said() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if !said() {
		t.Errorf("serve did not say where the token is:\n%s", p.stderr.String())
	}

	// In serve's directory, the file is the token.
	echo := writeScript(t, dir, "echo.yaml", echoScriptYAML)
	r := p.andon("run", "--script", echo)
	r.check(t, exitOK)
	id := strings.TrimSpace(r.stdout)
	p.andon("show", id).check(t, exitOK)

	// Elsewhere: no token, then --token, then ANDON_TOKEN.
	other := t.TempDir()
	r = runAndonIn(t, other, "runs", "--api", p.addr)
	r.check(t, exitFailure)
	if !strings.Contains(r.stderr, "needs an API token") || !strings.Contains(r.stderr, "ANDON_TOKEN") {
		t.Errorf("andon runs without a token: stderr %q", r.stderr)
	}
	r = runAndonIn(t, other, "runs", "--api", p.addr, "--token", token)
	r.check(t, exitOK)
	if !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, "local") {
		t.Errorf("andon runs --token does not list the run, owned by local:\n%s", r.stdout)
	}
	cmd := exec.Command(andonBin, "runs", "--api", p.addr)
	cmd.Dir, cmd.Env = other, append(os.Environ(), "ANDON_TOKEN="+token)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), id) {
		t.Errorf("andon runs with ANDON_TOKEN: %v\n%s", err, out)
	}

	// A viewer reads but may not cancel.
	storeArgs := []string{"--db", filepath.Join(dir, "andon.db"), "--key-file", filepath.Join(dir, "andon.key")}
	r = runAndonIn(t, dir, append([]string{"token", "create", "--name", "vic", "--role", "viewer"}, storeArgs...)...)
	r.check(t, exitOK)
	viewer := strings.TrimSpace(r.stdout)
	runAndonIn(t, other, "show", id, "--api", p.addr, "--token", viewer).check(t, exitOK)
	r = runAndonIn(t, other, "cancel", id, "--api", p.addr, "--token", viewer)
	r.check(t, exitFailure)
	if !strings.Contains(r.stderr, "needs the role operator or above") {
		t.Errorf("a viewer's cancel: stderr %q", r.stderr)
	}

	// Revoked: refused at once.
	r = runAndonIn(t, dir, append([]string{"token", "list"}, storeArgs...)...)
	vicID := regexp.MustCompile(`(tok_[0-9a-f]{16})\s+vic`).FindStringSubmatch(r.stdout)
	if vicID == nil {
		t.Fatalf("token list:\n%s", r.stdout)
	}
	runAndonIn(t, dir, append([]string{"token", "revoke", vicID[1]}, storeArgs...)...).check(t, exitOK)
	r = runAndonIn(t, other, "show", id, "--api", p.addr, "--token", viewer)
	r.check(t, exitFailure)
	if !strings.Contains(r.stderr, "revoked") {
		t.Errorf("a revoked token: stderr %q", r.stderr)
	}

	// The denials are audited, without the tokens.
	r = runAndonIn(t, dir, append([]string{"audit", "list", "--action", "api_denied"}, storeArgs...)...)
	r.check(t, exitOK)
	if n := strings.Count(r.stdout, "api_denied"); n != 3 {
		t.Errorf("%d api_denied rows, want 3 (no token, viewer's cancel, revoked):\n%s", n, r.stdout)
	}
	for _, secret := range []string{token, viewer} {
		if strings.Contains(r.stdout, secret) || strings.Contains(p.stderr.String(), secret) {
			t.Error("a token appears in the audit log or serve's output")
		}
	}

	// A second start keeps the tokens it has.
	p.stop()
	p = startServe(t, dir, "")
	if got := readToken(t, dir); got != token {
		t.Error("a second start replaced the token file")
	}
	if strings.Contains(p.stderr.String(), "created the first API token") {
		t.Errorf("a second start made another token:\n%s", p.stderr.String())
	}
	p.andon("runs").check(t, exitOK)
	p.stop()
}
