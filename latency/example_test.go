package latency_test

import (
	"fmt"
	"time"

	"github.com/cloudinfer/cloudinfer/latency"
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

func ExampleMeasure() {
	s := latency.Measure(streamed(100, 128, 156, 184), latency.Outcome{
		Endpoint: "openai/openai-compatible/llm", Start: latency.Start{Kind: latency.Warm},
	})
	fmt.Println("TTFT", s.TTFT, "E2E", s.E2E, "TPOT", s.TPOT)
	fmt.Println("N_out", s.OutputTokens, s.TokenSource, "ITL", s.ITL)
	// Output:
	// TTFT 100ms E2E 184ms TPOT 28ms
	// N_out 4 counted ITL [28ms 28ms 28ms]
}
