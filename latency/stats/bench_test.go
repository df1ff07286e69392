package stats

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/cloudinfer/cloudinfer/latency"
)

// benchSamples returns n varied measured requests: 2 endpoints × 2 classes,
// warm, cold and suspected starts, 1–64 chunks, TTFT and gaps lognormal.
func benchSamples(n int) []latency.Sample {
	rng := rand.New(rand.NewPCG(21, 22))
	out := make([]latency.Sample, n)
	for i := range out {
		ttft := math.Exp(math.Log(300) + 0.5*rng.NormFloat64())
		chunks := []latency.Chunk{empty(ttft * 0.8)}
		t := ttft
		for range 1 + rng.IntN(64) {
			chunks = append(chunks, content(t, 1+rng.IntN(2)))
			t += math.Exp(math.Log(20) + 0.4*rng.NormFloat64())
		}
		tl := stream(chunks...)
		tl.IntendedSend = tl.IntendedSend.Add(-time.Duration(rng.ExpFloat64() * float64(time.Millisecond)))
		kind := []latency.StartKind{latency.Warm, latency.Warm, latency.Warm, latency.Cold, latency.SuspectedCold}[rng.IntN(5)]
		o := latency.Outcome{Endpoint: []string{"aws/sagemaker/a", "gcp/vertex/b"}[rng.IntN(2)], Class: []string{"chat", "search"}[rng.IntN(2)],
			Start: latency.Start{Kind: kind, Reason: latency.ReasonNoEvidence}}
		if kind == latency.Cold {
			o.Start.Overhead = time.Duration(rng.ExpFloat64() * 2 * float64(time.Second))
		}
		out[i] = latency.Measure(tl, o)
	}
	return out
}

func BenchmarkDistAdd(b *testing.B) {
	var d Dist
	rng := rand.New(rand.NewPCG(1, 1))
	vals := make([]int64, 4096)
	for i := range vals {
		vals[i] = int64(math.Exp(math.Log(300e6) + 0.5*rng.NormFloat64()))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		d.Add(vals[i&4095])
		i++
	}
}

// BenchmarkRecorderAdd is the cost of recording one request (every
// metric, ~32 ITL gaps on average) into a warmed-up recorder.
func BenchmarkRecorderAdd(b *testing.B) {
	samples := benchSamples(4096)
	r := mustRecorder(b, SLA{Metric: latency.TTFT, Percentile: 95, Threshold: int64(500 * time.Millisecond)})
	for i := range samples {
		r.Add(&samples[i])
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r.Add(&samples[i&4095])
		i++
	}
}

func BenchmarkRecorderAddParallel(b *testing.B) {
	samples := benchSamples(4096)
	r := mustRecorder(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			r.Add(&samples[i&4095])
			i++
		}
	})
}

// BenchmarkRecorder1e6 records 10^6 requests (values jittered so that no
// two are alike) and reports the recorder's retained heap and its JSON
// size: both depend on the values' range, not on their number.
func BenchmarkRecorder1e6(b *testing.B) {
	const n = 1_000_000
	samples := benchSamples(4096)
	rng := rand.New(rand.NewPCG(3, 3))
	b.ReportAllocs()
	var heap, js float64
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r := mustRecorder(b)
		for i := range n {
			s := samples[i&4095] // ITL slices shared; scalars jittered
			j := 1 + 0.01*rng.NormFloat64()
			s.TTFT = time.Duration(float64(s.TTFT) * j)
			s.E2E = time.Duration(float64(s.E2E) * j)
			s.TPOT = time.Duration(float64(s.TPOT) * j)
			r.Add(&s)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap = float64(after.HeapAlloc) - float64(before.HeapAlloc)
		out, err := json.Marshal(r)
		if err != nil {
			b.Fatal(err)
		}
		js = float64(len(out))
		if got := r.Counts(Filter{}).Requests; got != n {
			b.Fatalf("recorded %d", got)
		}
		runtime.KeepAlive(r)
	}
	b.ReportMetric(heap, "heap-B/recorder")
	b.ReportMetric(js, "json-B/recorder")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/sample")
}
