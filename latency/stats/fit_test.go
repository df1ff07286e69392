package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/latency"
)

func TestFitLogNormalExact(t *testing.T) {
	// ln values 1, 2, 3: μ = 2, σ² = 2/3 (MLE divisor n).
	var d Dist
	for _, l := range []float64{1, 2, 3} {
		d.Add(int64(math.Round(math.Exp(l) * 1e6))) // e^l ms in ns
	}
	fit, ok := d.FitLogNormal()
	require.True(t, ok)
	ms := fit.InUnit(1e6)
	assert.InDelta(t, 2, ms.Mu, 1e-6)
	assert.InDelta(t, math.Sqrt(2.0/3), ms.Sigma, 1e-6)
	assert.Equal(t, uint64(3), fit.N)
	// p50 of LogNormal is e^μ; p99 is e^(μ + 2.3263·σ).
	assert.InEpsilon(t, math.Exp(2), ms.Quantile(0.5), 1e-6)
	assert.InEpsilon(t, math.Exp(2+2.326347874040841*math.Sqrt(2.0/3)), ms.Quantile(0.99), 1e-6)
	assert.True(t, math.IsNaN(ms.Quantile(1)))
	assert.InEpsilon(t, math.Exp(2+1.0/3), ms.Mean(), 1e-6)

	var one Dist
	one.Add(5)
	_, ok = one.FitLogNormal()
	assert.False(t, ok)
}

func TestFitLogNormalRecoversParameters(t *testing.T) {
	// The seed's decode gaps: mean ≈ 3.2 ms, sd ≈ 0.8 ms → σ² = ln(1 + 0.0625).
	sigma := math.Sqrt(math.Log(1 + 0.0625))
	mu := math.Log(3.2) - sigma*sigma/2 // of ln(ms)
	rng := rand.New(rand.NewPCG(11, 12))
	var d Dist
	for range 50000 {
		d.Add(int64(math.Exp(mu+sigma*rng.NormFloat64()) * 1e6))
	}
	fit, ok := d.FitLogNormal()
	require.True(t, ok)
	ms := fit.InUnit(1e6)
	assert.InDelta(t, mu, ms.Mu, 0.005)
	assert.InDelta(t, sigma, ms.Sigma, 0.005)
	// Fitted and observed p99 agree for lognormal data (within the sketch's 1%
	// and sampling noise).
	assert.InEpsilon(t, d.Quantile(0.99)/1e6, ms.Quantile(0.99), 0.02)
	assert.InEpsilon(t, 3.2, ms.Mean(), 0.01)
}

func TestReportFitsPrefillAndDecode(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	r := mustRecorder(t)
	for range 300 {
		ttft := math.Exp(math.Log(85) + 0.14*rng.NormFloat64())
		chunks := []latency.Chunk{content(ttft, 1)}
		at := ttft
		for range 20 {
			at += math.Exp(math.Log(3.1) + 0.25*rng.NormFloat64())
			chunks = append(chunks, content(at, 1))
		}
		s := latency.Measure(stream(chunks...), latency.Outcome{Endpoint: "e", Start: latency.Start{Kind: latency.Warm}})
		r.Add(&s)
	}
	rep := r.Report(ReportOptions{})
	g := rep.Group(GroupKey{Endpoint: "e", Start: latency.Warm})
	require.NotNil(t, g)
	require.Len(t, g.Fits, 2)
	pre, dec := g.Fits[0], g.Fits[1]
	assert.Equal(t, "prefill", pre.Phase)
	assert.Equal(t, uint64(300), pre.N)
	assert.InDelta(t, math.Log(85), pre.Mu, 0.03)
	assert.InDelta(t, 0.14, pre.Sigma, 0.02)
	assert.Equal(t, "decode", dec.Phase)
	assert.Equal(t, uint64(300*20), dec.N)
	assert.InDelta(t, math.Log(3.1), dec.Mu, 0.02)
	assert.InDelta(t, 0.25, dec.Sigma, 0.02)
	assert.InEpsilon(t, dec.ObservedP99, dec.FittedP99, 0.05)
}
