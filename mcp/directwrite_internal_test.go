//go:build unix

package mcp

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
	"time"
)

// nonBlockingWrite on a full pipe answers errWouldBlock instead of waiting
// for room, and what it wrote before is all there, whole.
func TestNonBlockingWriteOnAFullPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	write := nonBlockingWrite(w)
	if write == nil {
		t.Fatal("no non-blocking write for a pipe")
	}
	frame := append(bytes.Repeat([]byte("x"), 499), '\n')
	done := make(chan error, 1)
	var written int
	go func() {
		for written < 16<<20 {
			n, err := write(frame)
			if err != nil {
				if n != 0 {
					done <- errors.New("a refused write wrote something")
					return
				}
				done <- err
				return
			}
			if n != len(frame) {
				done <- errors.New("a partial write")
				return
			}
			written += n
		}
		done <- errors.New("16 MiB went into a pipe nobody reads")
	}()
	select {
	case err := <-done:
		if !errors.Is(err, errWouldBlock) {
			t.Fatalf("writing to a full pipe: %v, want errWouldBlock", err)
		}
	case <-time.After(10 * time.Second): // only keeps a broken test from hanging
		t.Fatal("a write to a full pipe blocked")
	}
	w.Close()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != written || !bytes.Equal(got, bytes.Repeat(frame, written/len(frame))) {
		t.Fatalf("the pipe holds %d bytes, want the %d written, in whole frames", len(got), written)
	}
}
