package bench

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPacerUniformIsExact(t *testing.T) {
	p := NewPacer(Uniform, 300, 1)
	for i := range 3000 {
		want := time.Duration(math.Round(float64(i) / 300 * float64(time.Second)))
		require.Equal(t, want, p.Next(), "send %d", i)
	}
	// A rate change after a pause restarts the schedule at its anchor.
	p.Rebase(20*time.Second, 4)
	assert.Equal(t, 20*time.Second, p.Next())
	assert.Equal(t, 20*time.Second+250*time.Millisecond, p.Next())
	assert.Equal(t, 4.0, p.Rate())
}

func TestPacerRebaseCarriesThePhase(t *testing.T) {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	// 3/s: sends at 0, 333 and 667 ms. A step boundary at 500 ms finds
	// half an interval left before 667 ms.
	p := NewPacer(Uniform, 3, 1)
	p.Next()
	p.Next()
	p.Rebase(500*time.Millisecond, 3)
	assert.InDelta(t, ms(666.667), p.Next(), float64(time.Microsecond), "holding the rate keeps the schedule")
	q := NewPacer(Uniform, 3, 1)
	q.Next()
	q.Next()
	q.Rebase(500*time.Millisecond, 6)
	assert.InDelta(t, ms(500+1000.0/12), q.Next(), float64(time.Microsecond), "half an interval at 6/s")
	assert.InDelta(t, ms(500+1000.0/12+1000.0/6), q.Next(), float64(time.Microsecond))

	// Over ten 500 ms steps at 3/s the ladder's schedule sends 15, as an
	// unbroken one does.
	r := NewPacer(Uniform, 3, 1)
	sent := 0
	for step := range 10 {
		end := time.Duration(step+1) * 500 * time.Millisecond
		for r.Peek() < end {
			r.Next()
			sent++
		}
		r.Rebase(end, 3)
	}
	assert.Equal(t, 15, sent)
}

func TestPacerPoissonStatistics(t *testing.T) {
	const rate, n = 200.0, 40000
	p := NewPacer(Poisson, rate, 42)
	prev := time.Duration(0)
	var sum, sumSq float64
	for range n {
		off := p.Next()
		gap := (off - prev).Seconds()
		require.GreaterOrEqual(t, gap, 0.0)
		sum += gap
		sumSq += gap * gap
		prev = off
	}
	mean := sum / n
	sd := math.Sqrt(sumSq/n - mean*mean)
	// Exponential gaps: mean 1/R and coefficient of variation 1.
	assert.InDelta(t, 1/rate, mean, 0.02/rate)
	assert.InDelta(t, 1.0, sd/mean, 0.03)
	// Seeded: the same seed gives the same schedule, another seed another.
	a, b, c := NewPacer(Poisson, rate, 7), NewPacer(Poisson, rate, 7), NewPacer(Poisson, rate, 8)
	same, differ := true, false
	for range 100 {
		x, y, z := a.Next(), b.Next(), c.Next()
		same = same && x == y
		differ = differ || x != z
	}
	assert.True(t, same)
	assert.True(t, differ)
}

func TestArrivalsString(t *testing.T) {
	assert.Equal(t, "constant", Uniform.String())
	assert.Equal(t, "poisson", Poisson.String())
}

func TestPacerSkipBefore(t *testing.T) {
	for _, arrivals := range []Arrivals{Uniform, Poisson} {
		for _, rebase := range []bool{false, true} {
			walk, skip := NewPacer(arrivals, 37, 5), NewPacer(arrivals, 37, 5)
			for _, p := range []*Pacer{walk, skip} {
				p.Next()
				p.Next()
				if rebase {
					p.Rebase(40*time.Millisecond, 23) // a fractional phase
				}
			}
			end := 3 * time.Second
			want := 0
			for walk.Peek() < end {
				walk.Next()
				want++
			}
			got := skip.SkipBefore(end, -1)
			assert.Equal(t, want, got, "%v rebase %v", arrivals, rebase)
			assert.Equal(t, walk.Peek(), skip.Peek(), "%v rebase %v: the same next offset", arrivals, rebase)
			assert.Zero(t, skip.SkipBefore(end, -1), "nothing left before end")
		}
	}
	p := NewPacer(Uniform, 100, 1)
	assert.Equal(t, 10, p.SkipBefore(time.Second, 10), "at most most")
	assert.Equal(t, 100*time.Millisecond, p.Peek())
}

func TestPacerTinyRateNeverWraps(t *testing.T) {
	for _, a := range []Arrivals{Uniform, Poisson} {
		p := NewPacer(a, 1e-12, 1)
		assert.GreaterOrEqual(t, p.Next(), time.Duration(0), "%v", a)
		assert.Greater(t, p.Next(), 100*365*24*time.Hour, "%v: at 1e-12/s the next send is centuries away", a)
		p.Rebase(time.Hour, 1e-12)
		assert.Greater(t, p.Next(), time.Hour, "%v: after a rebase too", a)
	}
}
