package stats

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cloudinfer/cloudinfer/latency"
)

// t0 is the hand-built timelines' origin; at(ms) is a point after it.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func at(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// stream builds a streamed timeline: one attempt sent at 0 on a reused
// connection, request written at 1 ms, first byte at 50 ms, and the given
// chunks; the call started and was intended at 0, and ended after the last
// chunk.
func stream(chunks ...latency.Chunk) *latency.Timeline {
	tl := &latency.Timeline{IntendedSend: at(0), Start: at(0), Streamed: true, Chunks: chunks}
	end := at(0)
	for _, c := range chunks {
		end = c.At
	}
	tl.End = end.Add(time.Millisecond)
	tl.Attempts = []latency.Attempt{{Number: 1, Send: at(0), GotConn: at(0), ConnReused: true, WroteRequest: at(1), FirstByte: at(50), End: tl.End, Status: 200}}
	return tl
}

func content(msAt float64, tokens int) latency.Chunk {
	return latency.Chunk{At: at(msAt), Tokens: tokens, Content: true}
}

func empty(msAt float64) latency.Chunk { return latency.Chunk{At: at(msAt)} }

// referenceRecorder records the seed's LLaMA-3-8B profile (TTFT 428 ± 31
// ms, TPOT 28.4 ± 2.1 ms, 50 tokens), a few cold starts and errors, from a
// fixed seed.
func referenceRecorder(t testing.TB) *Recorder {
	r := mustRecorder(t,
		SLA{Metric: latency.TTFT, Percentile: 95, Threshold: int64(480 * time.Millisecond), Starts: StartsAll},
		SLA{Metric: latency.TTFT, Percentile: 95, Threshold: int64(450 * time.Millisecond), Starts: StartsWarm},
		SLA{Name: "cold-start", Metric: latency.ColdStart, Percentile: 50, Threshold: int64(1200 * time.Millisecond), Starts: StartsCold},
	)
	rng := rand.New(rand.NewPCG(42, 42))
	for i := range 100 {
		ttft := 428 + 31*rng.NormFloat64()
		chunks := []latency.Chunk{empty(ttft * 0.9), content(ttft, 1)}
		at := ttft
		for range 49 {
			at += math.Max(28.4+2.1*rng.NormFloat64(), 1)
			chunks = append(chunks, content(at, 1))
		}
		chunks = append(chunks, empty(at+1))
		tl := stream(chunks...)
		o := latency.Outcome{Endpoint: "openai/openai-compatible/llama-3-8b", Class: "chat", Start: latency.Start{Kind: latency.Warm, Reason: latency.ReasonNoEvidence}, OutputTokens: 50}
		switch {
		case i%25 == 0:
			o.Start = latency.Start{Kind: latency.Cold, Reason: latency.ReasonServerReported, Overhead: 2800 * time.Millisecond}
			tl.ModelReady = tl.Send()
			for j := range tl.Chunks {
				tl.Chunks[j].At = tl.Chunks[j].At.Add(2800 * time.Millisecond)
			}
			tl.ModelReady = tl.Send().Add(2800 * time.Millisecond)
		case i%33 == 1:
			o.Err = "ERR_THROTTLED"
		}
		s := latency.Measure(tl, o)
		r.Add(&s)
	}
	r.SetWindow(t0, t0.Add(20*time.Second))
	return r
}
