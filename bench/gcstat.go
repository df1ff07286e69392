package bench

import (
	"math"
	"runtime/metrics"
	"time"
)

// gcSample is the process's garbage collector at one moment, as
// runtime/metrics says: the cycles completed and the histogram of its
// stop-the-world pauses. Two of them, before and after a run, give the
// run's collections and its longest pause (gcSample.since).
type gcSample struct {
	cycles uint64
	pauses *metrics.Float64Histogram // nil: not known
}

// gcMetricNames are read by sampleGC, in this order.
var gcMetricNames = [...]string{"/gc/cycles/total:gc-cycles", "/sched/pauses/total/gc:seconds"}

// sampleGC reads the collector's counters now.
func sampleGC() gcSample {
	var s [len(gcMetricNames)]metrics.Sample
	for i, n := range gcMetricNames {
		s[i].Name = n
	}
	metrics.Read(s[:])
	var g gcSample
	if s[0].Value.Kind() == metrics.KindUint64 {
		g.cycles = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindFloat64Histogram {
		g.pauses = s[1].Value.Float64Histogram()
	}
	return g
}

// since returns the collections completed between before and g, and the
// longest stop-the-world pause among them: the upper bound of the
// highest histogram bucket whose count grew (the runtime's buckets are
// a few percent wide; an unbounded last bucket gives its lower bound).
// The pause is 0 where the histogram is unknown or none grew.
func (g gcSample) since(before gcSample) (cycles int64, pauseMax time.Duration) {
	if g.cycles > before.cycles {
		cycles = int64(g.cycles - before.cycles)
	}
	h, b := g.pauses, before.pauses
	if h == nil || b == nil || len(h.Counts) != len(b.Counts) || len(h.Buckets) != len(h.Counts)+1 {
		return cycles, 0
	}
	for i := len(h.Counts) - 1; i >= 0; i-- {
		if h.Counts[i] <= b.Counts[i] {
			continue
		}
		bound := h.Buckets[i+1]
		if math.IsInf(bound, 1) {
			bound = h.Buckets[i]
		}
		if bound <= 0 || math.IsInf(bound, 0) || math.IsNaN(bound) {
			return cycles, 0
		}
		return cycles, time.Duration(bound * float64(time.Second))
	}
	return cycles, 0
}
