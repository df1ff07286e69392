package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkSleeper is the open loop's pacing alone: b.N waits on a
// constant schedule at each rate, with the default spin and with
// --send-spin=-1ns (off). It reports the lag's p50 and p99 (µs past each intended
// time) and the process CPU per wait (µs), whose rate × cost is the
// pacing's share of a core. At 8,000/s and 12,000/s the sends are closer
// than the default window, so the spun ones wake once a window and go
// out up to a window late. Run it on an idle machine: a busy one delays
// the wake-ups, not the pacing.
func BenchmarkSleeper(b *testing.B) {
	for _, rate := range []float64{100, 1000, 8000, 12000} {
		for _, spin := range []time.Duration{DefaultSendSpin, -1} {
			b.Run(fmt.Sprintf("rate-%.0f/spin-%v", rate, spin), func(b *testing.B) {
				gap := time.Duration(float64(time.Second) / rate)
				s := newSleeper(spin, DefaultSendWindow)
				defer s.stop()
				lags := make([]time.Duration, 0, b.N)
				ctx := context.Background()
				b.ReportAllocs()
				cpu0 := processCPU()
				start := time.Now()
				i := 0
				for b.Loop() {
					i++
					at := start.Add(time.Duration(i) * gap)
					s.until(ctx, at)
					lags = append(lags, time.Since(at))
				}
				cpu := processCPU() - cpu0
				slices.Sort(lags)
				b.ReportMetric(float64(lags[len(lags)/2].Nanoseconds())/1e3, "lag-p50-us")
				b.ReportMetric(float64(lags[len(lags)*99/100].Nanoseconds())/1e3, "lag-p99-us")
				b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(len(lags)), "cpu-us/wait")
				b.ReportMetric(100*float64(cpu)/float64(time.Since(start)), "%core")
			})
		}
	}
}
