package latency

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func BenchmarkMeasure(b *testing.B) {
	chunks := []Chunk{empty(90)}
	for i := range 64 {
		chunks = append(chunks, content(100+float64(i)*20, 1))
	}
	tl := stream(chunks...)
	b.ReportAllocs()
	for b.Loop() {
		_ = Measure(tl, Outcome{Endpoint: "e", Start: Start{Kind: Warm}})
	}
}

// BenchmarkClassify is the verdict of a call to a busy endpoint whose times
// to first byte vary (lognormal around 35 ms), as the client gives it on
// every successful call. Call n is sent after call n−1 ended, as in a
// closed loop of one.
func BenchmarkClassify(b *testing.B) { benchClassify(b, 100) }

// BenchmarkClassifyConcurrent is BenchmarkClassify with 64 calls in
// flight: each is sent 0.55 ms after the one before and takes about 35 ms,
// so the calls recorded before it ended after it was sent (the endpoint
// state's ring is searched, not its latest end).
func BenchmarkClassifyConcurrent(b *testing.B) { benchClassify(b, 0.55) }

// benchClassify classifies calls sent gapMs apart. One timeline is
// rewritten for each, so that the loop allocates nothing of its own.
func benchClassify(b *testing.B, gapMs float64) {
	c := NewClassifier(0, false)
	rng := rand.New(rand.NewPCG(3, 4))
	fbs := make([]float64, 1024)
	for i := range fbs {
		fbs[i] = math.Exp(math.Log(35) + 0.3*rng.NormFloat64())
	}
	tl := call(0, 1, 2, true)
	a, ch := &tl.Attempts[0], &tl.Chunks[0]
	n := 0
	next := func() *Timeline {
		send, fb := at(float64(n)*gapMs), ms(fbs[n&1023])
		tl.IntendedSend, tl.Start, a.Send, a.GotConn = send, send, send, send
		a.FirstByte = send.Add(fb)
		tl.End, a.End, ch.At = a.FirstByte.Add(time.Millisecond), a.FirstByte.Add(time.Millisecond), a.FirstByte.Add(time.Millisecond)
		n++
		return tl
	}
	for range 1024 {
		c.Classify(Evidence{Endpoint: "e", Timeline: next()})
	}
	b.ReportAllocs()
	for b.Loop() {
		c.Classify(Evidence{Endpoint: "e", Timeline: next()})
	}
}
