package latency

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSLA(t *testing.T) {
	tests := []struct {
		in   string
		want SLA
		err  bool
	}{
		{in: "ttft p95 150ms starts=warm", want: SLA{Metric: TTFT, Percentile: 95, Threshold: int64(150 * time.Millisecond), Starts: StartsWarm}},
		{in: "cold-start p50 1.2s starts=cold endpoint=aws/sagemaker/llm name=sm-cold",
			want: SLA{Name: "sm-cold", Metric: ColdStart, Percentile: 50, Threshold: int64(1200 * time.Millisecond), Starts: StartsCold, Endpoint: "aws/sagemaker/llm"}},
		{in: "TPOT P99.9 30ms class=chat", want: SLA{Metric: TPOT, Percentile: 99.9, Threshold: int64(30 * time.Millisecond), Starts: StartsAll, Class: "chat"}},
		{in: "output-tokens p50 200", want: SLA{Metric: OutputTokens, Percentile: 50, Threshold: 200, Starts: StartsAll}},
		{in: "ttft p95", err: true},
		{in: "latency p95 1s", err: true},
		{in: "ttft 95 1s", err: true},
		{in: "ttft p0 1s", err: true},
		{in: "ttft p101 1s", err: true},
		{in: "ttft p95 fast", err: true},
		{in: "ttft p95 -1s", err: true},
		{in: "output-tokens p95 1.5", err: true},
		{in: "ttft p95 1s starts=lukewarm", err: true},
		{in: "ttft p95 1s region=eu", err: true},
		{in: "ttft p95 1s class", err: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSLA(tc.in)
			if tc.err {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			again, err := ParseSLA(got.String())
			require.NoError(t, err)
			assert.Equal(t, got, again, "String round-trips")
		})
	}
	var s struct{ S SLA }
	require.NoError(t, json.Unmarshal([]byte(`{"S":"e2e p99 2s"}`), &s))
	assert.Equal(t, E2E, s.S.Metric)
	b, _ := json.Marshal(s)
	assert.JSONEq(t, `{"S":"e2e p99 2s"}`, string(b))
}

// mix records warm requests with TTFTs warmMs and cold ones with coldMs
// (cold by first request: no ready time, so the SLA clock is the send).
func mix(t *testing.T, warmMs, coldMs []float64) *Recorder {
	r := mustRecorder(t)
	for _, v := range warmMs {
		s := Measure(stream(content(v, 1)), Outcome{Endpoint: "e", Start: Start{Kind: Warm}})
		r.Add(&s)
	}
	for _, v := range coldMs {
		s := Measure(stream(content(v, 1)), Outcome{Endpoint: "e", Start: Start{Kind: Cold, Reason: ReasonIdleGap}})
		r.Add(&s)
	}
	return r
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestSLAAttribution(t *testing.T) {
	p95 := func(starts Starts) SLA {
		return SLA{Metric: TTFT, Percentile: 95, Threshold: int64(150 * time.Millisecond), Starts: starts}
	}
	t.Run("the cold requests explain the whole deviation", func(t *testing.T) {
		r := mix(t, repeat(100, 90), repeat(2000, 10))
		res := r.CheckSLA(p95(StartsAll))
		assert.False(t, res.Pass)
		assert.InEpsilon(t, 2000e6, res.Measured, 0.01)
		assert.InEpsilon(t, (2000.0-150)/150, res.Deviation, 0.02)
		require.NotNil(t, res.Attribution)
		assert.Equal(t, uint64(10), res.Attribution.ColdCount)
		assert.InEpsilon(t, 100e6, res.Attribution.WithoutCold, 0.01)
		assert.True(t, res.Attribution.WithoutColdPass)
		assert.Equal(t, 1.0, res.Attribution.ColdShare)

		warm := r.CheckSLA(p95(StartsWarm))
		assert.True(t, warm.Pass)
		assert.Nil(t, warm.Attribution)
	})
	t.Run("part of the deviation is the warm requests' own", func(t *testing.T) {
		// Warm p95 ≈ 162 ms (8% over, the seed's Vertex figure); the cold
		// requests push the all-starts p95 to ≈ 300 ms.
		warm := append(repeat(100, 85), repeat(162, 10)...)
		r := mix(t, warm, repeat(300, 6))
		res := r.CheckSLA(p95(StartsAll))
		assert.False(t, res.Pass)
		a := res.Attribution
		assert.InEpsilon(t, 162e6, a.WithoutCold, 0.01)
		assert.False(t, a.WithoutColdPass)
		want := (res.Measured - a.WithoutCold) / (res.Measured - 150e6)
		assert.InDelta(t, want, a.ColdShare, 1e-12)
		assert.InDelta(t, (300.0-162)/(300-150), a.ColdShare, 0.03)

		w := r.CheckSLA(p95(StartsWarm))
		assert.InDelta(t, 0.08, w.Deviation, 0.01)
	})
	t.Run("a passing SLA has no cold share", func(t *testing.T) {
		r := mix(t, repeat(100, 99), repeat(2000, 1))
		res := r.CheckSLA(p95(StartsAll))
		assert.True(t, res.Pass)
		assert.Equal(t, 0.0, res.Attribution.ColdShare)
		assert.Equal(t, uint64(1), res.Attribution.ColdCount)
	})
	t.Run("cold only with no warm requests", func(t *testing.T) {
		r := mix(t, nil, repeat(2000, 3))
		res := r.CheckSLA(p95(StartsAll))
		assert.Equal(t, 1.0, res.Attribution.ColdShare)
		res = r.CheckSLA(p95(StartsWarm))
		assert.True(t, res.NoData)
		assert.False(t, res.Pass)
	})
	t.Run("suspected-cold requests stay with the warm", func(t *testing.T) {
		r := mix(t, repeat(100, 90), nil)
		for range 10 {
			s := Measure(stream(content(900, 1)), Outcome{Endpoint: "e", Start: Start{Kind: SuspectedCold, Reason: ReasonSlowFirstByte}})
			r.Add(&s)
		}
		res := r.CheckSLA(p95(StartsWarm))
		assert.False(t, res.Pass, "suspicion does not excuse a slow request")
		all := r.CheckSLA(p95(StartsAll))
		assert.Equal(t, uint64(0), all.Attribution.ColdCount)
		assert.Equal(t, uint64(10), all.Attribution.SuspectedCount)
		assert.Equal(t, 0.0, all.Attribution.ColdShare)
	})
	t.Run("cold-start overhead SLA", func(t *testing.T) {
		// The seed's SageMaker figure: 2.8 s measured vs 1.2 s promised.
		r := mustRecorder(t)
		for range 5 {
			s := Measure(stream(content(100, 1)), Outcome{Endpoint: "sm", Start: Start{Kind: Cold, Reason: ReasonServerReported, Overhead: 2800 * time.Millisecond}})
			r.Add(&s)
		}
		res := r.CheckSLA(SLA{Metric: ColdStart, Percentile: 50, Threshold: int64(1200 * time.Millisecond), Starts: StartsCold})
		assert.False(t, res.Pass)
		assert.InDelta(t, 1.333, res.Deviation, 0.02)
		assert.False(t, math.IsNaN(res.Measured))
	})
}
