package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY returns a new pseudo-terminal: the controlling side, and the
// terminal a child can be given as its stderr.
func openPTY(t *testing.T) (ptmx, tty *os.File) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err == nil {
		err = unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0)
	}
	if err == nil {
		tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	}
	if err != nil {
		ptmx.Close()
		t.Skipf("cannot open a pseudo-terminal: %v", err)
	}
	return ptmx, tty
}

// TestCallProgressBarOnTerminal: with stderr a terminal, andon asks for
// progress and draws it as a bar, then erases the bar; stdout stays clean.
func TestCallProgressBarOnTerminal(t *testing.T) {
	t.Parallel()
	ptmx, tty := openPTY(t)
	defer ptmx.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*patience)
	defer cancel()
	cmd := exec.CommandContext(ctx, andonBin, "call", "--stdio", server(""), "progress", `{"count":4,"interval_ms":20}`)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close() // the child has it; the reader below ends when the child does
	var term bytes.Buffer
	copied := make(chan struct{})
	go func() {
		io.Copy(&term, ptmx) // ends with EIO once no one holds the terminal
		close(copied)
	}()
	code := exitCode(t, cmd.Wait())
	<-copied
	if code != exitOK || stdout.String() != "progress done\n" {
		t.Fatalf("exit %d, stdout %q, terminal %q", code, stdout.String(), term.String())
	}
	screen := term.String()
	for _, want := range []string{"] 100% step 4 of 4", "\r\x1b[K"} {
		if !strings.Contains(screen, want) {
			t.Errorf("terminal output %q lacks %q", screen, want)
		}
	}
	if !strings.HasSuffix(screen, "\r\x1b[K") {
		t.Errorf("the bar was not erased at the end: %q", screen)
	}
}
