//go:build unix

package sqlstore

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// lockProbeEnv, set, makes this test binary a probe that reports which
// process holds a POSIX lock on the file it names.
const lockProbeEnv = "ANDON_TEST_LOCK_PROBE"

// The checkpointer keeps SQLite's locks where they are. Closing any
// descriptor of a file drops every POSIX lock the process holds on it, so a
// checkpointer that opened the log's index (to read it) and closed it took
// SQLite's locks on the index away from every connection of the process,
// and other processes went on as if this one were not there: a run was
// lost between serve and a worker. After the checkpointer has run, another
// process still finds this one's lock on the index.
func TestCheckpointerKeepsSQLitesLocks(t *testing.T) {
	s := sqliteStore(t)
	path := dbPath(s)
	c := s.d.(*sqlite).checkpointer
	for i := range 3 { // a write, then the checkpoint of it: three times
		if _, err := s.d.exec(t.Context(), `CREATE TABLE locked`+strconv.Itoa(i)+` (x INTEGER)`); err != nil {
			t.Fatal(err)
		}
		made := c.made.Load()
		waitFor(t, "a checkpoint", func() bool { return c.made.Load() > made })
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestLockProbe$")
	cmd.Env = append(os.Environ(), lockProbeEnv+"="+path+"-shm")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the probe: %v\n%s", err, out)
	}
	want := fmt.Sprintf("locked by %d", os.Getpid())
	if !strings.Contains(string(out), want) {
		t.Fatalf("another process asked who locks %s-shm and heard %q, want %q: SQLite's locks are gone", path, out, want)
	}
}

// TestLockProbe is the probe's body, run in a process of its own by
// TestCheckpointerKeepsSQLitesLocks; otherwise it does nothing.
func TestLockProbe(t *testing.T) {
	path := os.Getenv(lockProbeEnv)
	if path == "" {
		t.Skip("run by TestCheckpointerKeepsSQLitesLocks")
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Would a write lock on the whole file be granted? F_GETLK answers
	// with a lock that stands in its way, and whose process holds it.
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil {
		t.Fatal(err)
	}
	if lk.Type == syscall.F_UNLCK {
		fmt.Println("unlocked")
		return
	}
	fmt.Printf("locked by %d\n", lk.Pid)
}
