package loadtest

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"
)

// footprint is what the processes that execute runs hold, summed over
// them: in this process, the live heap and goroutine stacks after a
// collection; across processes, what each worker's metrics endpoint says
// (heap allocated, garbage included since nobody collected it first;
// goroutine stacks; resident memory; goroutines), which is all another
// process shows.
type footprint struct {
	heap, stack, rss float64 // bytes; rss across processes only
	goroutines       float64
	polls            float64 // the watchers' backstop polls so far, summed
}

// footprint measures the runtime's footprint now.
func (h *Harness) footprint(ctx context.Context) (footprint, error) {
	if h.procs == nil {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		polls, _ := h.node.Runtime().Watcher().StoreReads()
		return footprint{heap: float64(m.HeapAlloc), stack: float64(m.StackInuse), goroutines: float64(runtime.NumGoroutine()), polls: float64(polls)}, nil
	}
	var f footprint
	for _, url := range h.procs.metrics {
		m, err := scrape(ctx, h.procs.http, url)
		if err != nil {
			return f, err
		}
		f.heap += m["go_memstats_heap_alloc_bytes"]
		f.stack += m["go_memstats_stack_inuse_bytes"]
		f.rss += m["process_resident_memory_bytes"]
		f.goroutines += m["go_goroutines"]
		f.polls += m[`andon_watcher_store_reads_total{read="poll"}`]
	}
	return f, nil
}

// scrape reads the samples of a Prometheus text endpoint, by their name
// with labels as written.
func scrape(ctx context.Context, rt http.RoundTripper, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("loadtest: scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("loadtest: scraping %s: %s", url, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out, sc.Err()
}
