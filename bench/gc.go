package bench

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
)

// A load generator's live heap is small (sketches, a bounded reservoir
// of points) while its garbage comes with every request, and each
// collection's stop of the world and marking delay its sends by
// milliseconds. So TuneGC lets the heap grow to gcFloor before a
// collection, or, past it, to (1 + benchGOGC/100) times the live heap.
// Against scripts/loopserver on 2 cores at 8,000/s, collecting at 5× a
// 5 MB live heap (every 0.35 s) left the schedule lag p99 at 1.34-24.4
// ms, with a floor of 256 MiB at 0.51-1.37 ms. Of floors of 64, 128 and
// 256 MiB, 64 left it at 0.83-2.17 ms, the others at 0.42-0.83 ms.
const (
	// benchGOGC is the collector's percentage once its goal for the live
	// heap is past the floor: collecting at 4× the live heap rather than 2×
	// halves the collections, which were a tenth of a closed loop's client
	// CPU.
	benchGOGC = 400
	// gcFloor is the least heap before a collection, and at most
	// 1/gcMemoryShare of the memory the process may use (a container's
	// limit, or the machine's memory).
	gcFloor       = 128 << 20
	gcMemoryShare = 4
)

// TuneGC tunes the garbage collector for a load generator's process,
// unless the environment sets GOGC or GOMEMLIMIT (the user's own
// tuning): until stop, the heap grows to 128 MiB (at most a quarter of
// the memory the process may use: a container's limit, or the
// machine's) before a collection, or past that to 5× the live heap. Its
// stop ends the tuning and restores the percentage set before. The
// collector is the process's: call it from a main package, once.
func TuneGC() (stop func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	floor := uint64(gcFloor)
	if m := memoryLimit(); m > 0 {
		floor = min(floor, m/gcMemoryShare)
	}
	t := newGCTuner(floor)
	before := debug.SetGCPercent(100)
	debug.SetGCPercent(before)
	t.start()
	return func() {
		t.stop()
		debug.SetGCPercent(before)
	}
}

// gcTuner keeps the collector's heap goal at floor or (1 +
// benchGOGC/100) times the live heap, whichever is more: after each
// collection it sets the percentage for the next from the live heap
// then. The runtime has a percentage (GOGC) and a ceiling (GOMEMLIMIT)
// but no floor, hence this.
type gcTuner struct {
	floor   uint64
	pct     int // the percentage set last
	stopped atomic.Bool
	sample  []metrics.Sample
}

func newGCTuner(floor uint64) *gcTuner {
	return &gcTuner{floor: floor, sample: []metrics.Sample{
		{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"},
	}}
}

// gcSentinel is an object whose collection marks a collection's end
// (the runtime then runs its cleanup). It holds a pointer so that it is
// not batched with other small objects, which would delay its collection.
type gcSentinel struct {
	_ *int
	_ [16]byte
}

// start sets the percentage for the live heap now and retunes after
// every collection until stop.
func (t *gcTuner) start() {
	t.tune()
	t.arm()
}

func (t *gcTuner) stop() { t.stopped.Store(true) }

// arm asks for tick after the next collection.
func (t *gcTuner) arm() {
	runtime.AddCleanup(new(gcSentinel), func(t *gcTuner) { t.tick() }, t)
}

func (t *gcTuner) tick() {
	if t.stopped.Load() {
		return
	}
	t.tune()
	t.arm()
}

// tune sets the percentage for the live heap, where it changed.
func (t *gcTuner) tune() {
	metrics.Read(t.sample)
	var v [3]uint64
	for i, s := range t.sample {
		if s.Value.Kind() == metrics.KindUint64 {
			v[i] = s.Value.Uint64()
		}
	}
	if p := gcPercent(v[0], v[0]+v[1]+v[2], t.floor); p != t.pct {
		debug.SetGCPercent(p)
		t.pct = p
	}
}

// gcPercentMax bounds the percentage for a tiny live heap (the goal is
// then the floor, give or take the runtime's rounding).
const gcPercentMax = 1_000_000

// gcPercent is the percentage whose heap goal is floor, or benchGOGC
// where that is more. The runtime's goal is the live heap plus the
// percentage of what a collection scans: the live heap, the goroutine
// stacks and the globals (scanned).
func gcPercent(live, scanned, floor uint64) int {
	scanned = max(scanned, live, 1)
	if live >= floor {
		return benchGOGC
	}
	p := (floor - live) * 100 / scanned // floor is well under 2^64/100
	if p > gcPercentMax {
		return gcPercentMax
	}
	return max(int(p), benchGOGC)
}

// memoryLimit is the memory this process may use: its cgroup's limit
// (version 2, then 1) or the machine's memory, whichever is less; 0 when
// neither is known.
func memoryLimit() uint64 {
	var limit uint64
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if b, err := os.ReadFile(path); err == nil {
			if v, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64); err == nil {
				limit = v // "max" (none) does not parse
				break
			}
		}
	}
	if total := machineMemory(); total > 0 && (limit == 0 || total < limit) {
		limit = total
	}
	return limit
}

// machineMemory is MemTotal from /proc/meminfo, in bytes; 0 where there
// is none.
func machineMemory() uint64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("MemTotal:")); ok {
			f := bytes.Fields(rest)
			if len(f) == 2 && string(f[1]) == "kB" {
				if v, err := strconv.ParseUint(string(f[0]), 10, 64); err == nil {
					return v << 10
				}
			}
		}
	}
	return 0
}
