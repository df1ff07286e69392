package bench

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync"
	"time"
)

// A load generator's live heap is small (sketches, a bounded reservoir
// of points) while its garbage comes with every request, and each
// collection's stop of the world and marking delay its sends by
// milliseconds. So TuneGC lets the heap grow by what the process
// allocates in gcEvery, up to gcFloor, before a collection, or, past
// that, to (1 + benchGOGC/100) times the live heap. Against
// scripts/loopserver on 2 cores at 8,000/s (60 MB allocated a second),
// collecting at 5× a 5 MB live heap (every 0.35 s) left the schedule lag
// p99 at 1.34-24.4 ms, with a floor of 256 MiB at 0.51-1.37 ms. Of
// floors of 64, 128 and 256 MiB, 64 left it at 0.83-2.17 ms, the others
// at 0.42-0.83 ms. The floor follows the allocation rate because a heap
// grown into fresh memory pays a page fault per 4 KiB: at 1,000/s a
// fixed 128 MiB floor cost 10-30 µs of CPU per request more.
const (
	// benchGOGC is the collector's percentage once its goal for the live
	// heap is past the floor: collecting at 4× the live heap rather than
	// 2× halves the collections, which were a tenth of a closed loop's
	// client CPU.
	benchGOGC = 400
	// gcEvery is the time between collections the floor is sized for,
	// from the allocation rate since the collection before.
	gcEvery = 2 * time.Second
	// gcFloor is the most the floor grows to, and at most
	// 1/gcMemoryShare of the memory the process may use (a container's
	// limit, or the machine's memory).
	gcFloor       = 128 << 20
	gcMemoryShare = 4
)

// TuneGC tunes the garbage collector for a load generator's process,
// unless the environment sets GOGC or GOMEMLIMIT (the user's own
// tuning): until stop, the heap grows by what the process allocates in
// 2 s, up to 128 MiB (and at most a quarter of the memory the process
// may use: a container's limit, or the machine's), before a collection,
// or past that to 5× the live heap. Its stop ends the tuning and
// restores the percentage set before. The collector is the process's:
// call it from a main package, once.
func TuneGC() (stop func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	most := uint64(gcFloor)
	if m := memoryLimit(); m > 0 {
		most = min(most, m/gcMemoryShare)
	}
	t := newGCTuner(most)
	before := debug.SetGCPercent(benchGOGC) // start sets it again
	t.start()
	return func() {
		t.stop()
		debug.SetGCPercent(before)
	}
}

// gcTuner keeps the collector's heap goal at a floor or (1 +
// benchGOGC/100) times the live heap, whichever is more: after each
// collection it sets the floor from the allocation rate since the one
// before (see gcEvery), at most most, and the percentage for the next
// from the live heap then. The runtime has a percentage (GOGC) and a
// ceiling (GOMEMLIMIT) but no floor, hence this.
type gcTuner struct {
	most uint64

	mu      sync.Mutex // held by tick and stop
	stopped bool
	pct     int // the percentage set last
	sample  []metrics.Sample
	// at and allocs are the time and the bytes allocated in all at the
	// last tune; zero before it.
	at     time.Time
	allocs uint64
}

func newGCTuner(most uint64) *gcTuner {
	return &gcTuner{most: most, sample: []metrics.Sample{
		{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"},
		{Name: "/gc/heap/allocs:bytes"},
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
	t.tick()
}

func (t *gcTuner) stop() {
	t.mu.Lock()
	t.stopped = true
	t.mu.Unlock()
}

// tick tunes and asks to be called again after the next collection,
// until stop.
func (t *gcTuner) tick() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	t.tune(time.Now())
	runtime.AddCleanup(new(gcSentinel), func(t *gcTuner) { t.tick() }, t)
}

// tune sets the percentage for the live heap and the allocation rate
// since the last tune, where it changed.
func (t *gcTuner) tune(now time.Time) {
	metrics.Read(t.sample)
	var v [4]uint64
	for i, s := range t.sample {
		if s.Value.Kind() == metrics.KindUint64 {
			v[i] = s.Value.Uint64()
		}
	}
	var floor uint64
	if !t.at.IsZero() && v[3] > t.allocs {
		floor = gcFloorFor(v[3]-t.allocs, now.Sub(t.at), t.most)
	}
	t.at, t.allocs = now, v[3]
	if p := gcPercent(v[0], v[0]+v[1]+v[2], floor); p != t.pct {
		debug.SetGCPercent(p)
		t.pct = p
	}
}

// gcFloorFor is the floor for allocs bytes allocated in el: what the
// process allocates in gcEvery at that rate, at most most.
func gcFloorFor(allocs uint64, el time.Duration, most uint64) uint64 {
	if el <= 0 {
		return most
	}
	f := float64(allocs) * gcEvery.Seconds() / el.Seconds()
	if f >= float64(most) {
		return most
	}
	return uint64(f)
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
