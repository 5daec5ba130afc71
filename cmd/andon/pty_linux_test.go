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

// TestProgressBarEscapesTheServer: on a terminal, a server's progress
// message is drawn in the bar escaped, while the bar's own "\r" and
// erase-line reach the terminal as the control sequences they are.
func TestProgressBarEscapesTheServer(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ptmx, tty := openPTY(t)
	defer ptmx.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*patience)
	defer cancel()
	cmd := exec.CommandContext(ctx, andonBin, "call", "--protocol", "2025-11-25", "--stdio", shellQuote(exe), "say")
	cmd.Env = append(os.Environ(), envHostileServer+"=1")
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var term bytes.Buffer
	copied := make(chan struct{})
	go func() {
		io.Copy(&term, ptmx)
		close(copied)
	}()
	code := exitCode(t, cmd.Wait())
	<-copied
	if code != exitOK {
		t.Fatalf("exit %d, stdout %q, terminal %q", code, stdout.String(), term.String())
	}
	checkNeutralised(t, "stdout", stdout.String())
	screen := term.String()
	if !strings.Contains(screen, `]  50% \x1b]0;TITLE\x07\x1b[2J\r\x1b[K`) || !strings.HasSuffix(screen, "\r\x1b[K") {
		t.Errorf("the terminal did not get the bar, with the server's message escaped, then erased: %q", screen)
	}
	// The terminal's own line discipline adds "\r" before "\n": look for
	// the server's sequences, not for every control character.
	for _, bad := range []string{"\x1b]", "\x07", "\x1b[2J", "\u009b", "\u202e", "\x7f"} {
		if strings.Contains(screen, bad) {
			t.Errorf("the terminal got the server's %q raw: %q", bad, screen)
		}
	}
}
