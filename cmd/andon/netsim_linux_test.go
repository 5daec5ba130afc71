package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A simulated network of machines on one host: each machine is a network
// namespace with one veth link to a router namespace, and the router
// relays every connection between machines through a delay relay
// (delayrelay_test.go) that holds each direction for half the round trip.
// Nothing listens on the host's own interfaces, and every address the
// processes use is inside those namespaces. The kernel here has no
// sch_netem (CONFIG_NET_SCH_NETEM is not set), so `tc netem` cannot add the
// delay; the relay does, in user space.

// netMachine is one machine of the simulated network.
type netMachine struct {
	ns   string // the namespace's name, under /run/netns
	addr string // its own address on its link
	gw   string // the router's address on its link: where it reaches others
}

// netSim is a running simulated network.
type netSim struct {
	tb       testing.TB
	router   string
	machines map[string]*netMachine
}

// netSimMachines are the machines every simulation has, in link order.
var netSimMachines = []string{"api", "worker", "mcp", "db"}

// canSimulateNetwork reports why this host cannot run the simulated
// network, or "" if it can.
func canSimulateNetwork() string {
	if os.Geteuid() != 0 {
		return "making network namespaces needs root"
	}
	for _, tool := range []string{"ip", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " is not installed (iproute2, util-linux)"
		}
	}
	if postgresBin("postgres") == "" {
		return "no PostgreSQL server binaries in /usr/lib/postgresql/*/bin"
	}
	if _, err := user.Lookup("postgres"); err != nil {
		return "no postgres user to run the PostgreSQL server as"
	}
	return ""
}

// postgresBin returns the path of a PostgreSQL server program, or "".
func postgresBin(name string) string {
	found, _ := filepath.Glob(filepath.Join("/usr/lib/postgresql/*/bin", name))
	if len(found) == 0 {
		return ""
	}
	return found[len(found)-1]
}

// newNetSim makes the namespaces and links, or skips tb with the reason it
// cannot. Everything is removed when tb ends.
func newNetSim(tb testing.TB) *netSim {
	tb.Helper()
	if why := canSimulateNetwork(); why != "" {
		tb.Skip("no simulated network: " + why)
	}
	var id [3]byte
	if _, err := rand.Read(id[:]); err != nil {
		tb.Fatal(err)
	}
	prefix := "andon-" + hex.EncodeToString(id[:])
	s := &netSim{tb: tb, router: prefix + "-router", machines: map[string]*netMachine{}}
	if out, err := exec.Command("ip", "netns", "add", s.router).CombinedOutput(); err != nil {
		tb.Skipf("no simulated network: ip netns add: %v: %s", err, bytes.TrimSpace(out))
	}
	tb.Cleanup(func() { s.ip("netns", "del", s.router) })
	s.ip("-n", s.router, "link", "set", "lo", "up")
	for i, name := range netSimMachines {
		m := &netMachine{
			ns:   prefix + "-" + name,
			addr: fmt.Sprintf("10.77.%d.2", i+1),
			gw:   fmt.Sprintf("10.77.%d.1", i+1),
		}
		s.machines[name] = m
		s.ip("netns", "add", m.ns)
		tb.Cleanup(func() { s.ip("netns", "del", m.ns) })
		s.ip("-n", m.ns, "link", "set", "lo", "up")
		peer := "to-" + name
		s.ip("link", "add", "name", "eth0", "netns", m.ns, "type", "veth", "peer", "name", peer, "netns", s.router)
		s.ip("-n", m.ns, "addr", "add", m.addr+"/24", "dev", "eth0")
		s.ip("-n", m.ns, "link", "set", "eth0", "up")
		s.ip("-n", s.router, "addr", "add", m.gw+"/24", "dev", peer)
		s.ip("-n", s.router, "link", "set", peer, "up")
	}
	return s
}

// ip runs ip with args and fails tb if it fails; a cleanup's failure is
// only logged.
func (s *netSim) ip(args ...string) {
	s.tb.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		msg := fmt.Sprintf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
		if args[0] == "netns" && args[1] == "del" {
			s.tb.Log(msg)
			return
		}
		s.tb.Fatal(msg)
	}
}

// command returns a command that runs in machine's namespace (or the
// router's, for "router").
func (s *netSim) command(machine, name string, args ...string) *exec.Cmd {
	ns := s.router
	if machine != "router" {
		ns = s.machines[machine].ns
	}
	return exec.Command("nsenter", append([]string{"--net=/run/netns/" + ns, "--", name}, args...)...)
}

// relay starts the delay relay in the router: a connection to from's
// gateway on port reaches to's address on the same port, delayed by rtt/2
// each way. routes are "FROM>TO:PORT".
func (s *netSim) relay(rtt time.Duration, routes ...string) {
	s.tb.Helper()
	spec := (rtt / 2).String()
	for _, r := range routes {
		from, rest, _ := strings.Cut(r, ">")
		to, port, _ := strings.Cut(rest, ":")
		spec += fmt.Sprintf(" %s:%s=%s:%s", s.machines[from].gw, port, s.machines[to].addr, port)
	}
	exe, err := os.Executable()
	if err != nil {
		s.tb.Fatal(err)
	}
	cmd := s.command("router", exe)
	cmd.Env = append(os.Environ(), envDelayRelay+"="+spec)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		s.tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		s.tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		s.tb.Fatal(err)
	}
	s.tb.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != delayRelayReady {
		s.tb.Fatalf("the delay relay did not start: %q, %v", line, err)
	}
}

// dialer returns a DialContext that connects from inside machine's
// namespace, for a client in this process: the socket is made on an OS
// thread that has joined the namespace and never serves another goroutine.
func (s *netSim) dialer(machine string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	path := "/run/netns/" + s.machines[machine].ns
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		type dialed struct {
			c   net.Conn
			err error
		}
		done := make(chan dialed, 1)
		go func() {
			// Never unlocked: the thread, now in another namespace,
			// ends with this goroutine.
			runtime.LockOSThread()
			f, err := os.Open(path)
			if err != nil {
				done <- dialed{err: err}
				return
			}
			defer f.Close()
			if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
				done <- dialed{err: fmt.Errorf("setns %s: %w", path, err)}
				return
			}
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			done <- dialed{c, err}
		}()
		r := <-done
		return r.c, r.err
	}
}

// netPostgres is a PostgreSQL server of the test's own on the db machine.
type netPostgres struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// startPostgres initialises a cluster in a fresh directory and starts a
// server on the db machine's address, port 5432, trusting every client on
// the simulated network. It is stopped when tb ends.
func (s *netSim) startPostgres() {
	s.tb.Helper()
	pgUser, err := user.Lookup("postgres")
	if err != nil {
		s.tb.Fatal(err)
	}
	uid, _ := strconv.Atoi(pgUser.Uid)
	gid, _ := strconv.Atoi(pgUser.Gid)
	dir, err := os.MkdirTemp("", "andon-netpg-")
	if err != nil {
		s.tb.Fatal(err)
	}
	s.tb.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chown(dir, uid, gid); err != nil {
		s.tb.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	asPostgres := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command("nsenter", append([]string{"--net=/run/netns/" + s.machines["db"].ns,
			"--setuid", pgUser.Uid, "--setgid", pgUser.Gid, "--", postgresBin(name)}, args...)...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C", "LC_ALL=C"}
		return cmd
	}
	if out, err := asPostgres("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync").CombinedOutput(); err != nil {
		s.tb.Fatalf("initdb: %v\n%s", err, out)
	}
	hba, err := os.OpenFile(filepath.Join(data, "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		s.tb.Fatal(err)
	}
	fmt.Fprintln(hba, "host all all 10.77.0.0/16 trust")
	hba.Close()
	args := []string{"-D", data, "-c", "listen_addresses=" + s.machines["db"].addr, "-c", "port=5432",
		"-c", "unix_socket_directories=" + dir}
	// A statement log, to count the trips a cancel makes to the database
	// (docs/benchmarks.md): every statement, with its time and client.
	stmtLog := os.Getenv(pgStatementLogEnv)
	if stmtLog != "" {
		args = append(args, "-c", "log_statement=all", "-c", "log_line_prefix=%m [%p] %r ")
	}
	cmd := asPostgres("postgres", args...)
	var log lockedBuffer
	if stmtLog != "" {
		s.tb.Cleanup(func() { os.WriteFile(stmtLog, []byte(log.String()), 0o644) })
	}
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		s.tb.Fatal(err)
	}
	pg := &netPostgres{cmd: cmd, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(pg.exited)
	}()
	s.tb.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt) // fast shutdown
		select {
		case <-pg.exited:
		case <-time.After(2 * patience):
			cmd.Process.Kill()
			<-pg.exited
		}
	})
	deadline := time.Now().Add(2 * patience)
	for !strings.Contains(log.String(), "ready to accept connections") {
		select {
		case <-pg.exited:
			s.tb.Fatalf("postgres exited:\n%s", log.String())
		default:
		}
		if time.Now().After(deadline) {
			s.tb.Fatalf("postgres did not start:\n%s", log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pgStatementLogEnv names a file to which the simulated network's
// PostgreSQL server, if set, writes a log of every statement it ran, when
// the test or benchmark ends.
const pgStatementLogEnv = "ANDON_NET_PG_STATEMENT_LOG"

// postgresURL is the URL at which machine reaches the test's PostgreSQL
// server: through its gateway, over the relay.
func (s *netSim) postgresURL(machine string) string {
	return "postgres://postgres@" + s.machines[machine].gw + ":5432/postgres?sslmode=disable"
}
