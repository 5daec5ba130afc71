package loadtest

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// The machine's own stalls. A storm's p99 over ten waves is set by its
// slowest wave, and a wave keeps every CPU busy: andon, the MCP server, the
// harness and PostgreSQL share them. On a saturated machine, anything that
// wakes — a service of the machine's, a kernel worker — takes a CPU from a
// thread that was ready to run, for a scheduler slice of milliseconds, and
// so does a hypervisor that runs another guest on the CPU. No code of
// andon's can take that back; the hiccup meter measures it, so that a tail
// can be read against what the machine itself does to a thread that never
// blocks.

// Hiccups is what the meter saw: the gaps in which a spinning thread did
// not run.
type Hiccups struct {
	// Threads is how many threads spun at once, each on an OS thread of
	// its own and never blocking.
	Threads int
	// Elapsed is how long they spun.
	Elapsed time.Duration
	// Gaps are the gaps longer than HiccupMin, of all threads, longest
	// first.
	Gaps []time.Duration
}

// HiccupMin is the shortest gap the meter records: shorter ones are a
// clock read's or an interrupt's, not a thread kept from a CPU.
const HiccupMin = 500 * time.Microsecond

// MeasureHiccups spins threads threads for d (or until ctx ends) and
// returns the gaps in which one of them did not run. With threads below
// the number of CPUs, a gap is a stall of the machine with a CPU to
// spare; with as many threads as CPUs, it is what a saturated machine
// costs a thread that is ready to run.
func MeasureHiccups(ctx context.Context, threads int, d time.Duration) Hiccups {
	if threads < 1 {
		threads = 1
	}
	end := time.Now().Add(d)
	gaps := make([][]time.Duration, threads)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range threads {
		wg.Go(func() {
			// A thread of its own: the Go scheduler cannot move another
			// goroutine onto it, and its gaps are the kernel's doing.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			last := time.Now()
			for n := 0; ; n++ {
				now := time.Now()
				if gap := now.Sub(last); gap > HiccupMin {
					gaps[i] = append(gaps[i], gap)
				}
				last = now
				if now.After(end) || n%4096 == 0 && ctx.Err() != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	h := Hiccups{Threads: threads, Elapsed: time.Since(start), Gaps: slices.Concat(gaps...)}
	slices.SortFunc(h.Gaps, func(a, b time.Duration) int { return int(b - a) })
	return h
}

// Over counts the gaps longer than d.
func (h Hiccups) Over(d time.Duration) int {
	n := 0
	for _, g := range h.Gaps {
		if g > d {
			n++
		}
	}
	return n
}

// String is the line andon-load prints: how many gaps passed each bound,
// over all threads, and the longest.
func (h Hiccups) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "hiccups threads=%d cpus=%d elapsed_s=%.1f", h.Threads, runtime.NumCPU(), h.Elapsed.Seconds())
	for _, bound := range []time.Duration{time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond} {
		fmt.Fprintf(&b, " over_%dms=%d", bound/time.Millisecond, h.Over(bound))
	}
	var longest time.Duration
	if len(h.Gaps) > 0 {
		longest = h.Gaps[0]
	}
	fmt.Fprintf(&b, " longest_ms=%.2f", float64(longest)/float64(time.Millisecond))
	return b.String()
}
