package bench_test

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// ksDistance is the one-sample Kolmogorov–Smirnov statistic of xs
// against cdf.
func ksDistance(xs []float64, cdf func(float64) float64) float64 {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	n := float64(len(xs))
	d := 0.0
	for i, x := range xs {
		f := cdf(x)
		d = max(d, math.Abs(float64(i+1)/n-f), math.Abs(f-float64(i)/n))
	}
	return d
}

func gammaGaps(rate, burstiness float64, seed uint64, n int) []float64 {
	g := bench.NewGamma(rate, burstiness, seed)
	gaps := make([]float64, n)
	prev := time.Duration(0)
	for i := range gaps {
		off := g.Next()
		gaps[i] = (off - prev).Seconds()
		prev = off
	}
	return gaps
}

// TestGammaKolmogorovSmirnov: the gaps of a gamma schedule pass a KS test
// (5% level) against the gamma of shape burstiness and mean 1/rate, for a
// bursty and a smooth burstiness, and fail it against the other's.
func TestGammaKolmogorovSmirnov(t *testing.T) {
	const rate, n = 50.0, 4000
	crit := 1.36 / math.Sqrt(n)
	cdf := func(b float64) func(float64) float64 {
		return distuv.Gamma{Alpha: b, Beta: rate * b}.CDF
	}
	for _, b := range []float64{0.5, 3} {
		gaps := gammaGaps(rate, b, 7, n)
		d := ksDistance(gaps, cdf(b))
		t.Logf("burstiness %g: KS D = %.4f (critical %.4f at 5%%)", b, d, crit)
		assert.Less(t, d, crit, "burstiness %g", b)
		other := 3.5 - b // 0.5 ↔ 3
		assert.Greater(t, ksDistance(gaps, cdf(other)), crit, "burstiness %g's gaps against %g's law", b, other)
		mean := 0.0
		for _, g := range gaps {
			mean += g / n
		}
		assert.InEpsilon(t, 1/rate, mean, 0.1)
	}
	// Burstiness 1 is Poisson: exponential gaps.
	d := ksDistance(gammaGaps(rate, 1, 3, n), distuv.Exponential{Rate: rate}.CDF)
	assert.Less(t, d, crit)
}

// perSecond counts offs in each second [s, s+1) below secs.
func perSecond(offs []time.Duration, secs int) []float64 {
	c := make([]float64, secs)
	for _, o := range offs {
		if s := int(o / time.Second); s < secs {
			c[s]++
		}
	}
	return c
}

// TestRampSchedule: each second of a linear and an exponential ramp, and
// of the hold after it, holds within 2% the sends the rate's line gives
// there (its integral over the second).
func TestRampSchedule(t *testing.T) {
	for _, shape := range []string{bench.RampLinear, bench.RampExponential} {
		rp := &bench.Ramp{From: 100, To: 1000, Over: bench.Duration(10 * time.Second), Shape: shape}
		p := &bench.Plan{Targets: []bench.Target{target("m", false)}, Load: bench.Load{Ramp: rp}, Limits: bench.Limits{Requests: 1}}
		require.NoError(t, p.Prepare())
		require.Equal(t, bench.LoadRamp, p.Load.Model)
		offs := rampOffsets(t, p, 12*time.Second)
		got := perSecond(offs, 12)
		for s := range 12 {
			want := integral(rp.RateAt, time.Duration(s)*time.Second, time.Duration(s+1)*time.Second)
			assert.InEpsilon(t, want, got[s], 0.02, "%s: second %d", shape, s)
		}
		assert.InDelta(t, 100, rp.RateAt(0), 1e-9)
		assert.InDelta(t, 1000, rp.RateAt(20*time.Second), 1e-9)
		if shape == bench.RampExponential {
			assert.InDelta(t, math.Sqrt(100*1000), rp.RateAt(5*time.Second), 1e-6, "the geometric mean halfway")
		} else {
			assert.InDelta(t, 550, rp.RateAt(5*time.Second), 1e-9)
		}
	}
}

// integral integrates f over [a, b) numerically.
func integral(f func(time.Duration) float64, a, b time.Duration) float64 {
	const n = 1000
	step := (b - a) / n
	sum := 0.0
	for i := range n {
		sum += f(a+step*time.Duration(i)+step/2) * step.Seconds()
	}
	return sum
}

// rampOffsets replays the plan's schedule without sending: the offsets
// the sender would be told.
func rampOffsets(t *testing.T, p *bench.Plan, until time.Duration) []time.Duration {
	t.Helper()
	s := bench.ScheduleOf(p.Load, p.Seed)
	var offs []time.Duration
	for s.Peek() < until {
		offs = append(offs, s.Next())
	}
	return offs
}

// TestRampAgainstEmulator: a live ramp's sends, as the emulator saw them
// arrive, hold the line's rate each second within 2%.
func TestRampAgainstEmulator(t *testing.T) {
	srv := startEmulator(t, 1, []emulator.Endpoint{fastEndpoint("fast", 2)})
	rp := &bench.Ramp{From: 150, To: 450, Over: bench.Duration(2 * time.Second)}
	p := &bench.Plan{Targets: []bench.Target{target("fast", false)}, Load: bench.Load{Model: bench.LoadRamp, Ramp: rp},
		Limits: bench.Limits{Duration: bench.Duration(2 * time.Second)}}
	res, err := bench.Run(context.Background(), p, bench.Options{Connect: emulatorConnect(srv)})
	require.NoError(t, err)
	tr := res.Targets[0]
	require.Zero(t, tr.Counts().Failed, "%v", tr.ErrorExamples)
	var offs []time.Duration
	for _, r := range srv.Records() {
		offs = append(offs, r.Arrival.Sub(tr.Begin))
	}
	got := perSecond(offs, 2)
	if raceEnabled || tr.MachineCPU >= bench.CPUBoundShare || tr.Late > 0 {
		t.Logf("late %d, machine CPU %.0f%%: the rate check gives way to the lateness report", tr.Late, 100*tr.MachineCPU)
		return
	}
	for s := range 2 {
		// The line's integral over the second: 225 and 375 sends.
		want := integral(rp.RateAt, time.Duration(s)*time.Second, time.Duration(s+1)*time.Second)
		assert.InEpsilon(t, want, got[s], 0.02, "second %d", s)
	}
	assert.Contains(t, tr.Load, "ramp linear 150→450 req/s over 2s")
}

func TestArrivalPlanErrors(t *testing.T) {
	for name, ld := range map[string]bench.Load{
		"gamma no rate":   {Model: bench.LoadGamma},
		"gamma burst":     {Model: bench.LoadGamma, Rate: 5, Burstiness: -1},
		"gamma burst big": {Model: bench.LoadGamma, Rate: 5, Burstiness: 1e3},
		"ramp none":       {Model: bench.LoadRamp},
		"ramp shape":      {Ramp: &bench.Ramp{From: 1, To: 2, Over: bench.Duration(time.Second), Shape: "cubic"}},
		"ramp rate":       {Ramp: &bench.Ramp{From: 0, To: 2, Over: bench.Duration(time.Second)}},
		"ramp over":       {Ramp: &bench.Ramp{From: 1, To: 2}},
		"ramp arrivals":   {Ramp: &bench.Ramp{From: 1, To: 2, Over: bench.Duration(time.Second), Arrivals: "gamma"}},
	} {
		t.Run(name, func(t *testing.T) {
			p := &bench.Plan{Targets: []bench.Target{target("m", false)}, Load: ld, Limits: bench.Limits{Requests: 1}}
			err := p.Prepare()
			require.Error(t, err)
			assert.Equal(t, errcodes.InvalidParam, errcodes.From(err).Code, "%v", err)
		})
	}
	p := &bench.Plan{Targets: []bench.Target{target("m", false)}, Load: bench.Load{Model: bench.LoadGamma, Rate: 5}, Limits: bench.Limits{Requests: 1}}
	require.NoError(t, p.Prepare())
	assert.Equal(t, 1.0, p.Load.Burstiness, "the default is Poisson")
	assert.Equal(t, "gamma 5 req/s, burstiness 1", p.Load.String())
}
