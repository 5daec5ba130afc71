package mcptest

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// The file mirrors the records in memory: every one, in the same order,
// once closeFile returns, however many goroutines record at once.
func TestRecordFileKeepsEveryRecordInOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "records.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := newRecorder()
	r.setFile(f)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				r.add(Record{Kind: Received, Method: "notifications/cancelled", ID: fmt.Sprintf("%d-%d", g, i)})
			}
		})
	}
	wg.Wait()
	r.closeFile()
	r.add(Record{Kind: Received, Method: "after close"}) // memory only
	got, err := ReadRecords(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := r.snapshot()
	want = want[:len(want)-1]
	if len(got) != len(want) {
		t.Fatalf("the file has %d records, memory %d", len(got), len(want))
	}
	for i := range want {
		if got[i].ID != want[i].ID || !got[i].At.Equal(want[i].At) {
			t.Fatalf("record %d: file %s at %v, memory %s at %v", i, got[i].ID, got[i].At, want[i].ID, want[i].At)
		}
	}
}

// Once sync returns, the file holds every record added before: what the
// server lets out after it (a response) is never ahead of its records.
func TestRecordSyncWaitsForTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "records.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := newRecorder()
	r.setFile(f)
	defer r.closeFile()
	for round := 1; round <= 50; round++ {
		for range 20 {
			r.add(Record{Kind: Received, Method: "tools/call"})
		}
		r.sync()
		got, err := ReadRecords(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 20*round {
			t.Fatalf("round %d: after sync the file has %d records, want %d", round, len(got), 20*round)
		}
	}
}
