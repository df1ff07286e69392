package stats

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/latency"
)

// randomSample builds a plausible streamed request: TTFT ~ LogNormal around
// ttftMs, nOut tokens at ~tpotMs, on one of two endpoints and classes.
func randomSample(rng *rand.Rand, i int) latency.Sample {
	ttft := 100 + rng.ExpFloat64()*50
	tpot := 10 + rng.NormFloat64()
	n := 1 + rng.IntN(40)
	chunks := []latency.Chunk{empty(ttft * 0.5)}
	t := ttft
	for range n {
		chunks = append(chunks, content(t, 1))
		t += math.Max(tpot+rng.NormFloat64(), 0.1)
	}
	tl := stream(chunks...)
	tl.Attempts[0].ConnReused = rng.IntN(10) != 0
	o := latency.Outcome{Endpoint: []string{"a", "b"}[i%2], Class: []string{"x", "y", "z"}[i%3], Start: latency.Start{Kind: latency.Warm}}
	switch rng.IntN(20) {
	case 0:
		o.Start = latency.Start{Kind: latency.Cold, Reason: latency.ReasonNotReadyThenReady, Overhead: ms(1000 + rng.Float64()*500)}
	case 1:
		o.Err = "ERR_THROTTLED"
	}
	if rng.IntN(2) == 0 {
		o.OutputTokens = n
	}
	// Spread the samples over a minute.
	shift := time.Duration(i) * 10 * time.Millisecond
	tl.IntendedSend, tl.Start, tl.End = tl.IntendedSend.Add(shift), tl.Start.Add(shift), tl.End.Add(shift)
	return latency.Measure(tl, o)
}

func mustRecorder(t testing.TB, slas ...SLA) *Recorder {
	r, err := NewRecorder(RecorderOptions{SLAs: slas})
	require.NoError(t, err)
	return r
}

func TestMergeEqualsOneRecorder(t *testing.T) {
	sla := SLA{Metric: latency.TTFT, Percentile: 95, Threshold: int64(ms(180)), Starts: StartsAll}
	rng := rand.New(rand.NewPCG(7, 8))
	all, a, b := mustRecorder(t, sla), mustRecorder(t, sla), mustRecorder(t, sla)
	var ttfts []float64
	for i := range 6000 {
		s := randomSample(rng, i)
		all.Add(&s)
		if rng.IntN(2) == 0 {
			a.Add(&s)
		} else {
			b.Add(&s)
		}
		if s.Err == "" {
			ttfts = append(ttfts, float64(s.TTFT))
		}
	}
	require.NoError(t, a.Merge(b))

	ja, err := json.Marshal(a)
	require.NoError(t, err)
	jall, err := json.Marshal(all)
	require.NoError(t, err)
	assert.JSONEq(t, string(jall), string(ja), "merged recorder encodes exactly like the one that saw everything")

	// Across machines: decode both halves and merge into an empty recorder.
	ja2, _ := json.Marshal(mustRecorder(t, sla)) // empty
	var fresh Recorder
	require.NoError(t, json.Unmarshal(ja2, &fresh))
	for _, half := range []*Recorder{a} {
		j, _ := json.Marshal(half)
		var dec Recorder
		require.NoError(t, json.Unmarshal(j, &dec))
		require.NoError(t, fresh.Merge(&dec))
	}
	jf, _ := json.Marshal(&fresh)
	assert.JSONEq(t, string(jall), string(jf))

	// And the sketch's quantiles are within 1% of the exact ones.
	slices.Sort(ttfts)
	d := all.Dist(latency.TTFT, Filter{})
	for _, q := range []float64{0.5, 0.9, 0.99} {
		assert.InEpsilon(t, ttfts[int(q*float64(len(ttfts)-1))], d.Quantile(q), RelativeAccuracy)
	}
	assert.Equal(t, uint64(len(ttfts)), d.Count())
}

func TestMergeOfSplitDecodedHalvesIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	all, a, b := mustRecorder(t), mustRecorder(t), mustRecorder(t)
	for i := range 3000 {
		s := randomSample(rng, i)
		all.Add(&s)
		if i < 1500 {
			a.Add(&s)
		} else {
			b.Add(&s)
		}
	}
	var merged Recorder
	for _, r := range []*Recorder{a, b} {
		j, err := json.Marshal(r)
		require.NoError(t, err)
		var dec Recorder
		require.NoError(t, json.Unmarshal(j, &dec))
		require.NoError(t, merged.Merge(&dec))
	}
	for _, m := range latency.Metrics() {
		assert.Equal(t, all.Dist(m, Filter{}).Summary(), merged.Dist(m, Filter{}).Summary(), m.String())
	}
	assert.Equal(t, all.Counts(Filter{}), merged.Counts(Filter{}))
	b1, e1 := all.Window()
	b2, e2 := merged.Window()
	assert.True(t, b1.Equal(b2) && e1.Equal(e2), "window survives the wire")
}

func TestMergeRefusesDifferentSLAs(t *testing.T) {
	a := mustRecorder(t, SLA{Metric: latency.TTFT, Percentile: 95, Threshold: 1e8})
	b := mustRecorder(t, SLA{Metric: latency.TTFT, Percentile: 99, Threshold: 1e8})
	s := latency.Measure(stream(content(100, 1)), latency.Outcome{Start: latency.Start{Kind: latency.Warm}})
	b.Add(&s)
	assert.Error(t, a.Merge(b))
	// An empty recorder without SLAs adopts the other's.
	var e Recorder
	require.NoError(t, e.Merge(b))
	assert.Equal(t, b.SLAs(), e.SLAs())
}

func TestRecorderCountsAndGoodput(t *testing.T) {
	r := mustRecorder(t,
		SLA{Metric: latency.TTFT, Percentile: 99, Threshold: int64(ms(200))},
		SLA{Metric: latency.TPOT, Percentile: 99, Threshold: int64(ms(30)), Starts: StartsWarm},
		SLA{Metric: latency.ITL, Percentile: 99, Threshold: int64(ms(1))}, // pooled: never gates goodput
	)
	add := func(tl *latency.Timeline, o latency.Outcome) {
		s := latency.Measure(tl, o)
		r.Add(&s)
	}
	warm := latency.Outcome{Endpoint: "e", Start: latency.Start{Kind: latency.Warm}}
	add(stream(content(150, 1), content(170, 1)), warm)                                                                     // good
	add(stream(content(250, 1), content(270, 1)), warm)                                                                     // TTFT too slow
	add(stream(content(150, 1), content(190, 1)), warm)                                                                     // TPOT 40 ms too slow
	add(stream(content(150, 1)), latency.Outcome{Endpoint: "e", OutputTokens: 1, Start: latency.Start{Kind: latency.Warm}}) // no TPOT: good
	cold := latency.Outcome{Endpoint: "e", Start: latency.Start{Kind: latency.Cold, Reason: latency.ReasonFirstRequest}}
	add(stream(content(150, 1), content(190, 1)), cold) // TPOT SLA is warm-only: good
	add(stream(content(150, 1)), latency.Outcome{Endpoint: "e", Err: "ERR_STREAM_INTERRUPTED"})
	add(nil, latency.Outcome{Endpoint: "e", Err: "ERR_THROTTLED"})

	c := r.Counts(Filter{})
	assert.Equal(t, int64(7), c.Requests)
	assert.Equal(t, int64(2), c.Failed)
	assert.Equal(t, map[string]int64{"ERR_STREAM_INTERRUPTED": 1, "ERR_THROTTLED": 1}, c.Errors)
	assert.Equal(t, int64(3), c.Good)
	assert.Equal(t, int64(1), c.TokensFromServer)
	assert.Equal(t, int64(4), c.TokensCounted)
	assert.Equal(t, int64(2+2+2+1+2), c.OutputTokens)

	// Failed requests stay out of the distributions.
	assert.Equal(t, uint64(5), r.Dist(latency.TTFT, Filter{}).Count())
	assert.Equal(t, uint64(4), r.Dist(latency.TTFT, Filter{Starts: StartsWarm}).Count())
	assert.Equal(t, uint64(1), r.Dist(latency.TTFT, Filter{Starts: StartsCold}).Count())
	assert.Equal(t, int64(2), r.Counts(Filter{Starts: StartsAll}).Failed)
	assert.Equal(t, int64(0), r.Counts(Filter{Starts: StartsWarm}).Failed)
	assert.Equal(t, []GroupKey{{Endpoint: "e", Start: latency.Warm}, {Endpoint: "e", Start: latency.Cold}, {Endpoint: "e"}}, r.Groups())
	assert.Equal(t, uint64(0), r.Dist(latency.Metric(200), Filter{}).Count())
}

func TestRecorderConcurrentAdds(t *testing.T) {
	r := mustRecorder(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for i := range 500 {
				s := randomSample(rng, i)
				r.Add(&s)
			}
		})
	}
	// Reads and merges run alongside.
	wg.Go(func() {
		for range 20 {
			_ = r.Report(ReportOptions{})
			_, _ = json.Marshal(r)
		}
	})
	wg.Wait()
	assert.Equal(t, int64(4000), r.Counts(Filter{}).Requests)
}

func TestNewRecorderRejectsBadSLA(t *testing.T) {
	_, err := NewRecorder(RecorderOptions{SLAs: []SLA{{Metric: latency.TTFT, Percentile: 120, Threshold: 1}}})
	assert.Error(t, err)
}

func TestRecorderUnmarshalRejects(t *testing.T) {
	for name, in := range map[string]string{
		"not json":        `{`,
		"version":         `{"version":2,"relative_accuracy":0.01,"groups":[]}`,
		"accuracy":        `{"version":1,"relative_accuracy":0.02,"groups":[]}`,
		"unknown metric":  `{"version":1,"relative_accuracy":0.01,"groups":[{"endpoint":"e","class":"","start":"warm","counts":{},"metrics":{"nope":{}}}]}`,
		"duplicate group": `{"version":1,"relative_accuracy":0.01,"groups":[{"endpoint":"e","start":"warm"},{"endpoint":"e","start":"warm"}]}`,
		"bad sla":         `{"version":1,"relative_accuracy":0.01,"slas":["ttft p0 1ms"],"groups":[]}`,
		"within no sla":   `{"version":1,"relative_accuracy":0.01,"groups":[{"endpoint":"e","start":"warm","within":[{"metric":"ttft","threshold":1,"count":0}]}]}`,
		"within other":    `{"version":1,"relative_accuracy":0.01,"slas":["ttft p95 1ms"],"groups":[{"endpoint":"e","start":"warm","within":[{"metric":"ttft","threshold":2,"count":0}]}]}`,
		"within too many": `{"version":1,"relative_accuracy":0.01,"slas":["ttft p95 1ms"],"groups":[{"endpoint":"e","start":"warm","within":[{"metric":"ttft","threshold":1000000,"count":1}]}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			var r Recorder
			assert.Error(t, json.Unmarshal([]byte(in), &r))
		})
	}
}

// TestRecorderWithoutThresholdCounts: an encoding without the exact
// threshold counts still decodes and merges; its SLAs are then checked on
// the sketch's estimate, and a merge with it keeps no partial count.
func TestRecorderWithoutThresholdCounts(t *testing.T) {
	sla := SLA{Metric: latency.TTFT, Percentile: 50, Threshold: int64(ms(100)), Starts: StartsAll}
	r := mustRecorder(t, sla)
	for _, v := range []float64{50, 150, 150} {
		s := ttftSample("e", latency.Warm, ms(v))
		r.Add(&s)
	}
	enc, err := json.Marshal(r)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(enc, &m))
	for _, g := range m["groups"].([]any) {
		delete(g.(map[string]any), "within")
	}
	old, err := json.Marshal(m)
	require.NoError(t, err)
	var back Recorder
	require.NoError(t, json.Unmarshal(old, &back))
	require.NoError(t, back.Merge(r))
	res := back.CheckSLA(sla)
	assert.Equal(t, uint64(6), res.Count)
	assert.False(t, res.Pass)
	assert.InEpsilon(t, 150e6, res.Measured, RelativeAccuracy)
	_, _, exact := back.distWithin(latency.TTFT, Filter{}, sla.Threshold)
	assert.False(t, exact)
}
