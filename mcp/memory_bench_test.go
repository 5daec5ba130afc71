package mcp_test

import (
	"context"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/mcp/mcptest"
)

// BenchmarkInFlightMemory measures the client's memory per call in flight:
// 1,000 calls wait on one stdio connection (the server, a subprocess, holds
// them all), and the heap the client holds for them is divided by 1,000.
// DESIGN.md's target is at most 8 KiB per in-flight call.
//
//	go test -run '^$' -bench InFlightMemory -benchtime 3x ./mcp/
func BenchmarkInFlightMemory(b *testing.B) {
	const calls = 1000
	for _, version := range []string{mcp.Version20260728, mcp.Version20251125} {
		b.Run(version, func(b *testing.B) {
			var perCall float64
			for range b.N {
				perCall += inFlightBytes(b, version, calls) / calls
			}
			b.ReportMetric(perCall/float64(b.N), "B/in-flight-call")
		})
	}
}

func inFlightBytes(b *testing.B, version string, calls int) float64 {
	b.Helper()
	record := filepath.Join(b.TempDir(), "records.jsonl")
	exe := serverCommand(b, "-record", record)
	c, err := mcp.Connect(context.Background(), exe, &mcp.ClientOptions{ProtocolVersion: version})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() { c.CallTool(ctx, "slow", map[string]any{"ms": 600000}, nil) })
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		recs, _ := mcptest.ReadRecords(record)
		started := 0
		for _, r := range recs {
			if r.Kind == mcptest.ToolStarted {
				started++
			}
		}
		if started == calls {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d calls started", started, calls)
		}
		time.Sleep(10 * time.Millisecond)
	}
	during := heap()
	cancel()
	wg.Wait()
	// The callers' own goroutines are the caller's, not the client's: their
	// stacks are not in the heap figure.
	return float64(during) - float64(before)
}
