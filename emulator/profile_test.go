package emulator

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// meanSD returns the mean and sample standard deviation of xs.
func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)-1))
}

func within(t *testing.T, what string, got, want, rel float64) {
	t.Helper()
	assert.InDelta(t, want, got, want*rel, "%s: got %.3f, want %.3f ± %.0f%%", what, got, want, rel*100)
}

// TestReferenceCalibration draws the reference experiment (512-token prompt,
// concurrency 1, no max tokens) from each A10 profile with the emulator's own
// sampling code and compares with MEASUREMENT.md's table.
func TestReferenceCalibration(t *testing.T) {
	table := []struct {
		name           string
		ttft, ttftSD   float64
		tpot, tpotSD   float64
		total, totalSD float64
		totalSDTol     float64
	}{
		{"llama-3-8b", 428, 31, 28.4, 2.1, 1912, 147, 0.03},
		{"phi-3-mini", 156, 12, 12.7, 1.3, 798, 64, 0.06}, // floor of independent draws: 66.8 ms
		{"qwen2-7b", 312, 24, 21.9, 1.8, 1520, 118, 0.03},
	}
	const n = 40000
	for _, row := range table {
		t.Run(row.name, func(t *testing.T) {
			p, ok := BuiltinProfile(row.name)
			require.True(t, ok)
			r := rand.New(rand.NewPCG(1, 2))
			ttft, tpot, total := make([]float64, n), make([]float64, n), make([]float64, n)
			for i := range n {
				d := drawRequest(p, 0, r)
				ttft[i] = d.prefillMs
				sum := 0.0
				for _, g := range d.gapsMs {
					sum += g
				}
				if d.n > 1 {
					tpot[i] = sum / float64(d.n-1)
				} else {
					tpot[i] = d.tpotMs
				}
				total[i] = d.prefillMs + sum
			}
			m, sd := meanSD(ttft)
			within(t, "TTFT mean", m, row.ttft, 0.01)
			within(t, "TTFT sd", sd, row.ttftSD, 0.03)
			m, sd = meanSD(tpot)
			within(t, "TPOT mean", m, row.tpot, 0.01)
			within(t, "TPOT sd", sd, row.tpotSD, 0.03)
			m, sd = meanSD(total)
			within(t, "total mean", m, row.total, 0.01)
			within(t, "total sd", sd, row.totalSD, row.totalSDTol)
			t.Logf("%s: TTFT %.1f±%.1f TPOT %.2f±%.2f total %.0f±%.1f", row.name, mean(ttft), sdOf(ttft), mean(tpot), sdOf(tpot), mean(total), sdOf(total))
		})
	}
}

func mean(xs []float64) float64 { m, _ := meanSD(xs); return m }
func sdOf(xs []float64) float64 { _, s := meanSD(xs); return s }

func TestGPUVariantsScaleDecode(t *testing.T) {
	a10, _ := BuiltinProfile("llama-3-8b-a10")
	ref, _ := BuiltinProfile("llama-3-8b")
	assert.Equal(t, ref.TPOTMs, a10.TPOTMs)
	for gpu, ms := range map[string]float64{"a100": 7.9, "h100": 3.1} {
		p, ok := BuiltinProfile("llama-3-8b-" + gpu)
		require.True(t, ok)
		assert.InDelta(t, ref.TPOTMs.Mean*ms/18.2, p.TPOTMs.Mean, 1e-9)
		assert.Equal(t, ref.OutputTokens, p.OutputTokens, "output length does not depend on the GPU")
	}
	sl, _ := BuiltinProfile("serverless")
	dd, _ := BuiltinProfile("dedicated")
	assert.Equal(t, Dist{312, 247}, sl.TTFTMs)
	assert.Equal(t, Dist{87, 3.1}, dd.TTFTMs)
	assert.InDelta(t, 92, dd.TTFTMs.Quantile(0.95), 0.5)
}

func TestDistSample(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, d := range []Dist{{100, 10}, {5, 4}, {1, 0.1}} {
		xs := make([]float64, 50000)
		for i := range xs {
			xs[i] = d.sample(r)
		}
		m, sd := meanSD(xs)
		within(t, "mean", m, d.Mean, 0.02)
		within(t, "sd", sd, d.SD, 0.04)
	}
	assert.Equal(t, 7.0, Dist{7, 0}.sample(r))
	assert.Equal(t, 0.0, Dist{0, 3}.sample(r))
}

func TestProfileValidate(t *testing.T) {
	good, _ := BuiltinProfile("phi-3-mini")
	require.NoError(t, good.Validate())
	for name, mut := range map[string]func(*Profile){
		"negative ttft":   func(p *Profile) { p.TTFTMs.Mean = -1 },
		"NaN sd":          func(p *Profile) { p.TPOTMs.SD = math.NaN() },
		"unknown fault":   func(p *Profile) { p.ErrorRates = map[string]float64{"gremlins": 0.1} },
		"rate above 1":    func(p *Profile) { p.ErrorRates = map[string]float64{"internal": 1.5} },
		"bad throttle":    func(p *Profile) { p.Throttle = &TokenBucket{RatePerSec: 0, Burst: 1} },
		"negative jitter": func(p *Profile) { p.GapJitter = -0.1 },
	} {
		p := good
		mut(&p)
		assert.Error(t, p.Validate(), name)
	}
}

func TestProfileValidateMore(t *testing.T) {
	good, _ := BuiltinProfile("phi-3-mini")
	for name, mut := range map[string]func(*Profile){
		"rates total above 1":    func(p *Profile) { p.ErrorRates = map[string]float64{"internal": 0.6, "throttle": 0.5} },
		"infinite throttle rate": func(p *Profile) { p.Throttle = &TokenBucket{RatePerSec: math.Inf(1), Burst: 1} },
	} {
		p := good
		mut(&p)
		err := p.Validate()
		if assert.Error(t, err, name) {
			assert.Contains(t, err.Error(), map[string]string{"rates total above 1": "error_rates", "infinite throttle rate": "throttle"}[name])
		}
	}
	p := good
	p.ErrorRates = map[string]float64{"internal": 0.7, "throttle": 0.2, "quota": 0.1}
	assert.NoError(t, p.Validate(), "rates that total 1 (up to rounding) are fine")
	e := Endpoint{Name: "x", Profile: good, IdleWindowMs: math.Inf(1)}
	assert.Error(t, e.Validate(), "an infinite idle window")
}
