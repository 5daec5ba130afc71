package mcptest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// A client that has read a response finds in the record file the request
// it answered: the server lets nothing out before its records are there.
func TestRecordFileHasTheRequestBeforeTheResponse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "records.jsonl")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		code := Main(t.Context(), []string{"-record", path}, inR, outW, io.Discard)
		outW.Close()
		done <- code
	}()
	replies := bufio.NewReader(outR)
	for i := 1; i <= 200; i++ {
		if _, err := fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i); err != nil {
			t.Fatal(err)
		}
		if _, err := replies.ReadBytes('\n'); err != nil {
			t.Fatal(err)
		}
		recs, err := ReadRecords(path)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(recs); n != i || recs[n-1].Method != "ping" || recs[n-1].ID != strconv.Itoa(i) {
			t.Fatalf("after the reply to ping %d the file has %d records, want %d", i, n, i)
		}
	}
	inW.Close()
	if code := <-done; code != 0 {
		t.Errorf("Main returned %d, want 0", code)
	}
}

// The same over HTTP: the response to a POST comes after the record of
// the message it answers is in the file.
func TestRecordFileHasTheRequestBeforeTheHTTPResponse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "records.jsonl")
	ctx, cancel := context.WithCancel(t.Context())
	urls, urlW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		code := Main(ctx, []string{"-record", path, "-http", "127.0.0.1:0", "-generations", "sessions", "-json-response"}, strings.NewReader(""), urlW, io.Discard)
		urlW.Close()
		done <- code
	}()
	url, err := bufio.NewReader(urls).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, urls)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	for i := 1; i <= 50; i++ {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, i)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSpace(url), strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		recs, err := ReadRecords(path)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(recs); n != i || recs[n-1].Method != "initialize" || recs[n-1].ID != strconv.Itoa(i) {
			t.Fatalf("after the response to initialize %d (%s) the file has %d records, want %d", i, resp.Status, n, i)
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("Main returned %d, want 0", code)
	}
}
