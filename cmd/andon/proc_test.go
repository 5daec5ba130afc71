package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/sqlstore/pgtest"
)

// andonProc is an andon command (serve, worker) running as a subprocess.
// It is killed when the test ends, unless stop stopped it.
type andonProc struct {
	tb     testing.TB
	cmd    *exec.Cmd
	out    *lockedBuffer // stdout and stderr
	exited chan struct{}
	err    error // cmd.Wait's, once exited is closed
}

// startAndon starts andon with args in dir, with env as its environment.
func startAndon(tb testing.TB, dir string, env []string, args ...string) *andonProc {
	tb.Helper()
	return startAndonCmd(tb, exec.Command(andonBin, args...), dir, env)
}

// startAndonCmd starts cmd, an andon command line (perhaps behind a
// wrapper such as nsenter), in dir, with env as its environment.
func startAndonCmd(tb testing.TB, cmd *exec.Cmd, dir string, env []string) *andonProc {
	tb.Helper()
	p := &andonProc{tb: tb, out: &lockedBuffer{}, exited: make(chan struct{}), cmd: cmd}
	p.cmd.Dir, p.cmd.Env = dir, env
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	tb.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// command is the andon command the process runs (serve, worker), whatever
// wraps it.
func (p *andonProc) command() string {
	for i, arg := range p.cmd.Args[:len(p.cmd.Args)-1] {
		if arg == andonBin {
			return p.cmd.Args[i+1]
		}
	}
	return p.cmd.Args[len(p.cmd.Args)-1]
}

// waitOutput waits until a line of the output matches.
func (p *andonProc) waitOutput(what string, match func(line string) bool) {
	p.tb.Helper()
	deadline := time.Now().Add(2 * patience) // a race-enabled build starts slowly
	for {
		for line := range strings.SplitSeq(p.out.String(), "\n") {
			if match(line) {
				return
			}
		}
		select {
		case <-p.exited:
			p.tb.Fatalf("andon %s exited before it printed %s; output:\n%s", p.command(), what, p.out.String())
		default:
		}
		if time.Now().After(deadline) {
			p.tb.Fatalf("andon %s did not print %s; output:\n%s", p.command(), what, p.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func contains(s string) func(string) bool {
	return func(line string) bool { return strings.Contains(line, s) }
}

// stop interrupts the process as Ctrl-C does, and checks that it stops
// cleanly.
func (p *andonProc) stop() {
	p.tb.Helper()
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		p.tb.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(2 * patience):
		p.cmd.Process.Kill()
		<-p.exited
		p.tb.Fatalf("andon %s did not stop on SIGINT; output:\n%s", p.command(), p.out.String())
	}
	if p.err != nil {
		p.tb.Errorf("andon %s exited with %v after SIGINT, want 0; output:\n%s", p.command(), p.err, p.out.String())
	}
	if !strings.Contains(p.out.String(), "andon: stopped") {
		p.tb.Errorf("andon %s did not say it stopped; output:\n%s", p.command(), p.out.String())
	}
}

// startServeAPI starts `andon serve --addr FREE args…` and waits until its
// API answers; it returns the process and the API's address.
func startServeAPI(tb testing.TB, dir string, env []string, args ...string) (*andonProc, string) {
	tb.Helper()
	for attempt := 0; ; attempt++ {
		addr := freeLoopback(tb)
		p := startAndon(tb, dir, env, append([]string{"serve", "--addr", addr}, args...)...)
		c := &api.Client{BaseURL: "http://" + addr, HTTP: &http.Client{Timeout: time.Second}}
		deadline := time.Now().Add(2 * patience)
		for time.Now().Before(deadline) && !isDone(p.exited) && c.Health(context.Background()) != nil {
			time.Sleep(20 * time.Millisecond)
		}
		if !isDone(p.exited) && c.Health(context.Background()) == nil {
			return p, addr
		}
		if attempt < 3 && strings.Contains(p.out.String(), "address already in use") {
			continue
		}
		tb.Fatalf("andon serve did not come up; output:\n%s", p.out.String())
	}
}

// freeLoopback returns a loopback address nothing listens on (as far as
// anyone can tell: the port was free a moment ago).
func freeLoopback(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func isDone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// processEnv is the environment of the andon processes of one deployment:
// they share the master key, as the processes of a deployment must.
func processEnv(tb testing.TB) []string {
	tb.Helper()
	var k [32]byte
	if _, err := rand.Read(k[:]); err != nil {
		tb.Fatal(err)
	}
	return append(os.Environ(), "ANDON_MASTER_KEY="+base64.StdEncoding.EncodeToString(k[:]))
}

// testPostgres returns the URL of a fresh schema on the test server. It
// carries a password the server does not ask for (trust), so that the
// tests can check that no process ever prints it; password is that
// password, or "" if the DSN came with a real one.
func testPostgres(tb testing.TB) (dsn, password string) {
	tb.Helper()
	dsn = pgtest.Schema(tb)
	if !isPostgres(dsn) {
		tb.Fatalf("%s must be a postgres:// URL for these tests, not key=value pairs", pgtest.Env)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatal(err)
	}
	if _, ok := u.User.Password(); ok || u.User == nil {
		return dsn, ""
	}
	password = "never-printed-" + hexToken(tb)
	u.User = url.UserPassword(u.User.Username(), password)
	return u.String(), password
}

func hexToken(tb testing.TB) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatal(err)
	}
	return strings.ToLower(base64.RawURLEncoding.EncodeToString(b[:]))
}
