package loadtest

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

// Where a wave's time went. A storm's p99 is its slowest wave's, and what
// made that wave slow is rarely in a profile of the whole storm: it is a
// few milliseconds in which the process did something else, or nothing.
// TraceReport reads an execution trace written by andon-load -trace and
// says, wave by wave (each a "cancel wave" task), how busy the process
// was millisecond by millisecond, when the calls' cancel notifications
// were written to the MCP server's pipe, which system calls took longer
// than a millisecond (an fsync on the writer's path shows as one), and
// which goroutines used the process's CPU meanwhile.

// WaveTask is the trace task of one wave of cancels.
const WaveTask = "cancel wave"

// TraceReportOptions tunes [TraceReport]. The zero value reports every
// wave from its start, with the eight largest users of the CPU.
type TraceReportOptions struct {
	// Skip leaves out the first part of each wave: what happened after
	// the signals were written, say.
	Skip time.Duration
	// Top is how many goroutine kinds to list; zero means 8.
	Top int
}

// TraceReport writes the per-wave report of the execution trace in r to w.
func TraceReport(r io.Reader, w io.Writer, opts TraceReportOptions) error {
	if opts.Top <= 0 {
		opts.Top = 8
	}
	tr, err := trace.NewReader(r)
	if err != nil {
		return fmt.Errorf("loadtest: reading the trace: %w", err)
	}
	var (
		waves    []span
		begun    = map[trace.TaskID]trace.Time{}
		running  = map[trace.GoID]trace.Time{}
		kind     = map[trace.GoID]string{} // what each goroutine was last seen doing
		inSys    = map[trace.GoID]trace.Time{}
		sysStack = map[trace.GoID]string{}
		ran      []slice // goroutine running time, by kind
		syscalls []slice
		writes   []trace.Time // cancel notifications written
	)
	for {
		ev, err := tr.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("loadtest: reading the trace: %w", err)
		}
		switch ev.Kind() {
		case trace.EventTaskBegin:
			if ev.Task().Type == WaveTask {
				begun[ev.Task().ID] = ev.Time()
			}
		case trace.EventTaskEnd:
			if t, ok := begun[ev.Task().ID]; ok {
				waves = append(waves, span{t, ev.Time()})
			}
		case trace.EventStateTransition:
			st := ev.StateTransition()
			if st.Resource.Kind != trace.ResourceGoroutine {
				continue
			}
			id := st.Resource.Goroutine()
			from, to := st.Goroutine()
			// A goroutine that exits has no stack: it is what it was
			// last seen doing (its creation names its entry).
			if st.Stack != trace.NoStack {
				kind[id] = goroutineKind(st.Stack)
			}
			switch {
			case to == trace.GoRunning:
				running[id] = ev.Time()
			case from == trace.GoRunning:
				if t, ok := running[id]; ok {
					ran = append(ran, slice{span{t, ev.Time()}, cmp.Or(kind[id], "(no stack)")})
					delete(running, id)
				}
			}
			if to == trace.GoNotExist {
				delete(kind, id)
			}
			switch {
			case to == trace.GoSyscall:
				inSys[id] = ev.Time()
				sysStack[id] = stackLine(st.Stack, 7)
				if strings.Contains(sysStack[id], "nonBlockingWrite") {
					writes = append(writes, ev.Time())
				}
			case from == trace.GoSyscall:
				if t, ok := inSys[id]; ok {
					syscalls = append(syscalls, slice{span{t, ev.Time()}, sysStack[id]})
					delete(inSys, id)
				}
			}
		}
	}
	if len(waves) == 0 {
		return fmt.Errorf("loadtest: the trace has no %q task: was it written by andon-load -trace?", WaveTask)
	}
	slices.SortFunc(waves, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	for i, wave := range waves {
		wave.start += trace.Time(opts.Skip)
		if wave.start >= wave.end {
			continue
		}
		reportWave(w, i, wave, ran, syscalls, writes, opts.Top)
	}
	return nil
}

// span is an interval of trace time.
type span struct{ start, end trace.Time }

// overlap is how much of s lies within o.
func (s span) overlap(o span) time.Duration {
	return time.Duration(max(0, min(s.end, o.end)-max(s.start, o.start)))
}

// slice is a span of one goroutine running (what: its kind) or in a
// system call (what: its stack).
type slice struct {
	span
	what string
}

func reportWave(w io.Writer, i int, wave span, running, syscalls []slice, writes []trace.Time, top int) {
	length := time.Duration(wave.end - wave.start)
	ms := int(length/time.Millisecond) + 1
	busy := make([]time.Duration, ms)
	byKind := map[string]time.Duration{}
	var cpu time.Duration
	for _, s := range running {
		d := s.overlap(wave)
		if d <= 0 {
			continue
		}
		cpu += d
		byKind[s.what] += d
		// Only the milliseconds the slice touches.
		first := max(0, int(time.Duration(s.start-wave.start)/time.Millisecond))
		last := min(ms-1, int(time.Duration(s.end-wave.start)/time.Millisecond))
		for b := first; b <= last; b++ {
			at := wave.start + trace.Time(time.Duration(b)*time.Millisecond)
			busy[b] += s.overlap(span{at, at + trace.Time(time.Millisecond)})
		}
	}
	written := make([]int, ms)
	for _, t := range writes {
		if t >= wave.start && t < wave.end {
			written[time.Duration(t-wave.start)/time.Millisecond]++
		}
	}
	fmt.Fprintf(w, "wave %d: %.1f ms, goroutines ran %.1f ms\n", i, msOf(length), msOf(cpu))
	var line strings.Builder
	for _, d := range busy {
		fmt.Fprintf(&line, "%3.0f", float64(d)/float64(time.Millisecond)*10)
	}
	fmt.Fprintf(w, "  busy, tenths of a CPU per ms: %s\n", line.String())
	line.Reset()
	for _, n := range written {
		fmt.Fprintf(&line, "%3d", n)
	}
	fmt.Fprintf(w, "  cancels written per ms:       %s\n", line.String())
	for _, s := range syscalls {
		if d := time.Duration(s.end - s.start); d > time.Millisecond && s.overlap(wave) > 0 {
			fmt.Fprintf(w, "  syscall %.2f ms from %+.2f ms: %s\n", msOf(d), msOf(time.Duration(s.start-wave.start)), s.what)
		}
	}
	kinds := slices.SortedFunc(maps.Keys(byKind), func(a, b string) int { return cmp.Compare(byKind[b], byKind[a]) })
	for _, k := range kinds[:min(top, len(kinds))] {
		fmt.Fprintf(w, "  %7.2f ms  %s\n", msOf(byKind[k]), k)
	}
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// goroutineKind names what a goroutine was doing when it stopped running:
// the function it was started with and the innermost frame of andon's.
func goroutineKind(st trace.Stack) string {
	var entry, ours string
	for f := range st.Frames() {
		entry = f.Func // the last frame is the goroutine's entry
		if ours == "" && strings.Contains(f.Func, "github.com/andonhq/andon/") {
			ours = f.Func
		}
	}
	if entry == "" {
		return ""
	}
	if ours == "" || ours == entry {
		return shortFunc(entry)
	}
	return shortFunc(entry) + " … " + shortFunc(ours)
}

// stackLine is the innermost n frames of st, innermost first.
func stackLine(st trace.Stack, n int) string {
	var fs []string
	for f := range st.Frames() {
		if len(fs) == n {
			break
		}
		fs = append(fs, shortFunc(f.Func))
	}
	return strings.Join(fs, " < ")
}

// shortFunc drops a function's module path.
func shortFunc(fn string) string {
	if i := strings.LastIndex(fn, "/"); i >= 0 {
		return fn[i+1:]
	}
	return fn
}
