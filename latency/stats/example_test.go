package stats_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/latency/stats"
)

// streamed builds a timeline by hand: sent at 0, a role-only chunk at 90
// ms, content chunks at the given milliseconds, a usage-only chunk last.
func streamed(contentMs ...int) *latency.Timeline {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tl := &latency.Timeline{IntendedSend: t0, Start: t0, Streamed: true}
	tl.AddChunk(at(90), 0, false)
	for _, ms := range contentMs {
		tl.AddChunk(at(ms), 1, true)
	}
	last := contentMs[len(contentMs)-1]
	tl.AddChunk(at(last+1), 0, false)
	tl.End = at(last + 1)
	tl.Attempts = []latency.Attempt{{Number: 1, Send: t0, ConnReused: true, End: tl.End}}
	return tl
}

func ExampleRecorder_CheckSLA() {
	rec, _ := stats.NewRecorder(stats.RecorderOptions{})
	add := func(kind latency.StartKind, ttftMs int) {
		s := latency.Measure(streamed(ttftMs, ttftMs+20), latency.Outcome{Start: latency.Start{Kind: kind}})
		rec.Add(&s)
	}
	for range 18 {
		add(latency.Warm, 120)
	}
	add(latency.Cold, 3000) // a first request: no ready time known
	add(latency.Cold, 3100)

	// Quantiles come from the sketch: within 1% of 3000 ms.
	sla, _ := stats.ParseSLA("ttft p95 150ms")
	r := rec.CheckSLA(sla)
	fmt.Printf("%s: measured %.0f ms, %+.0f%%, pass %v\n", r.SLA, r.Measured/1e6, r.Deviation*100, r.Pass)
	fmt.Printf("without the %d cold requests %.0f ms; they explain %.0f%% of the deviation\n",
		r.Attribution.ColdCount, r.Attribution.WithoutCold/1e6, r.Attribution.ColdShare*100)
	// Output:
	// ttft p95 150ms: measured 3027 ms, +1918%, pass false
	// without the 2 cold requests 120 ms; they explain 100% of the deviation
}

func ExampleRecorder_Merge() {
	// Two machines record, then ship their recorders as JSON.
	a, _ := stats.NewRecorder(stats.RecorderOptions{})
	b, _ := stats.NewRecorder(stats.RecorderOptions{})
	for i, r := range []*stats.Recorder{a, a, b} {
		s := latency.Measure(streamed(100+i*10), latency.Outcome{Start: latency.Start{Kind: latency.Warm}})
		r.Add(&s)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)

	var all stats.Recorder
	for _, j := range [][]byte{ja, jb} {
		var r stats.Recorder
		_ = json.Unmarshal(j, &r)
		_ = all.Merge(&r)
	}
	st := all.Dist(latency.TTFT, stats.Filter{}).Summary().Scaled(1e6)
	fmt.Printf("n=%d TTFT %.0f ± %.0f ms\n", st.Count, st.Mean, st.SD)
	// Output:
	// n=3 TTFT 110 ± 10 ms
}
