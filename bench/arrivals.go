package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// Burstiness bounds (Load.Burstiness).
const (
	MinBurstiness = 0.01
	MaxBurstiness = 100
)

// Gamma is an open-loop schedule with gamma-distributed inter-arrival
// times of mean 1/rate and shape burstiness (scale 1/(rate ×
// burstiness)), as vLLM's bench serve --burstiness draws them: 1 is
// Poisson (exponential gaps), below 1 burstier (clumps and long
// silences, coefficient of variation 1/√burstiness), above 1 smoother,
// toward a constant rate. Offsets are the running sum of the draws from
// the run's start, so a late send never shifts the ones after it. It is
// seeded: a run can be repeated.
type Gamma struct {
	rate, shape float64
	dist        distuv.Gamma
	sum         float64 // seconds
	next        time.Duration
}

var _ Schedule = (*Gamma)(nil)

// NewGamma returns a gamma schedule at rate requests per second with
// shape burstiness. Both must be positive (Plan.Prepare checks a plan's).
func NewGamma(rate, burstiness float64, seed uint64) *Gamma {
	g := &Gamma{rate: rate, shape: burstiness,
		dist: distuv.Gamma{Alpha: burstiness, Beta: rate * burstiness, Src: rand.NewPCG(seed, 0x6a09e667f3bcc908)}}
	g.advance()
	return g
}

func (g *Gamma) advance() {
	g.sum += g.dist.Rand()
	g.next = secondsOffset(g.sum)
}

// secondsOffset returns s seconds as an offset, Never past its range.
func secondsOffset(s float64) time.Duration {
	d := math.Round(s * float64(time.Second))
	if !(d < float64(Never)) {
		return Never
	}
	return time.Duration(d)
}

// Peek implements Schedule.
func (g *Gamma) Peek() time.Duration { return g.next }

// Next implements Schedule.
func (g *Gamma) Next() time.Duration {
	off := g.next
	g.advance()
	return off
}

// SkipBefore implements Schedule.
func (g *Gamma) SkipBefore(end time.Duration, most int) int {
	n := 0
	for g.next < end && (most < 0 || n < most) {
		g.advance()
		n++
	}
	return n
}

// Rate implements Schedule.
func (g *Gamma) Rate() float64 { return g.rate }

// Ramp is the ramp model: the rate goes from From to To over Over,
// linearly or exponentially, then holds at To. Sends are at the times the
// integral of the rate reaches 1, 2, 3, … (constant arrivals), or the
// running sum of Exp(1) draws (Poisson arrivals), so that a second of the
// ramp holds the rate the line gives there.
type Ramp struct {
	// From and To are the first and the last rate, in requests per second.
	From float64 `json:"from" yaml:"from"`
	To   float64 `json:"to" yaml:"to"`
	// Over is the ramp's length; the rate holds at To after it.
	Over Duration `json:"over" yaml:"over"`
	// Shape is linear (default) or exponential (a constant growth factor
	// per second: the rate multiplies by To/From over Over).
	Shape string `json:"shape,omitempty" yaml:"shape,omitempty"`
	// Arrivals is constant (default) or poisson.
	Arrivals string `json:"arrivals,omitempty" yaml:"arrivals,omitempty"`
}

// Ramp shapes.
const (
	RampLinear      = "linear"
	RampExponential = "exponential"
)

func (rp *Ramp) prepare() error {
	bad := func(format string, args ...any) error {
		return errcodes.Errorf(errcodes.InvalidParam, "bench: ramp: "+format, args...)
	}
	rp.Shape = strings.ToLower(rp.Shape)
	rp.Arrivals = strings.ToLower(rp.Arrivals)
	if rp.Shape == "" {
		rp.Shape = RampLinear
	}
	if rp.Arrivals == "" {
		rp.Arrivals = LoadConstant
	}
	switch {
	case rp.Shape != RampLinear && rp.Shape != RampExponential:
		return bad("shape %q: want linear or exponential", rp.Shape)
	case rp.Arrivals != LoadConstant && rp.Arrivals != LoadPoisson:
		return bad("arrivals %q: want constant or poisson", rp.Arrivals)
	case !(rp.From > 0 && rp.From <= MaxRate) || !(rp.To > 0 && rp.To <= MaxRate):
		return bad("rates from %g to %g must lie in (0, %g]", rp.From, rp.To, float64(MaxRate))
	case rp.Over <= 0:
		return bad("over %v must be positive", rp.Over)
	}
	return nil
}

// String describes the ramp.
func (rp *Ramp) String() string {
	return fmt.Sprintf("ramp %s %.4g→%.4g req/s over %v (%s)", rp.Shape, rp.From, rp.To, rp.Over, rp.Arrivals)
}

// RateAt returns the ramp's rate at offset t.
func (rp *Ramp) RateAt(t time.Duration) float64 {
	T := rp.Over.D().Seconds()
	x := min(max(t.Seconds()/T, 0), 1)
	if rp.Shape == RampExponential {
		return rp.From * math.Pow(rp.To/rp.From, x)
	}
	return rp.From + (rp.To-rp.From)*x
}

// count returns the integral of the rate from 0 to t seconds.
func (rp *Ramp) count(t float64) float64 {
	T := rp.Over.D().Seconds()
	r0, r1 := rp.From, rp.To
	u := min(t, T)
	var c float64
	if rp.Shape == RampExponential && r0 != r1 {
		a := math.Log(r1/r0) / T
		c = r0 * math.Expm1(a*u) / a
	} else {
		c = r0*u + (r1-r0)*u*u/(2*T)
	}
	if t > T {
		c += r1 * (t - T)
	}
	return c
}

// at returns the time, in seconds, at which the rate's integral reaches k.
func (rp *Ramp) at(k float64) float64 {
	T := rp.Over.D().Seconds()
	r0, r1 := rp.From, rp.To
	if cT := rp.count(T); k > cT {
		return T + (k-cT)/r1
	}
	if rp.Shape == RampExponential && r0 != r1 {
		a := math.Log(r1/r0) / T
		return math.Log1p(a*k/r0) / a
	}
	if r0 == r1 {
		return k / r0
	}
	// r0·t + (r1−r0)·t²/(2T) = k, the root in [0, T] (stable form).
	b := (r1 - r0) / (2 * T)
	return 2 * k / (r0 + math.Sqrt(r0*r0+4*b*k))
}

// rampSchedule is a Ramp's Schedule.
type rampSchedule struct {
	rp   *Ramp
	rng  *rand.Rand // nil: constant arrivals
	k    float64
	next time.Duration
}

var _ Schedule = (*rampSchedule)(nil)

func (rp *Ramp) schedule(seed uint64) *rampSchedule {
	s := &rampSchedule{rp: rp}
	if rp.Arrivals == LoadPoisson {
		s.rng = rand.New(rand.NewPCG(seed, 0xbb67ae8584caa73b))
		s.k = s.rng.ExpFloat64()
	}
	s.next = secondsOffset(rp.at(s.k))
	return s
}

func (s *rampSchedule) advance() {
	if s.rng != nil {
		s.k += s.rng.ExpFloat64()
	} else {
		s.k++
	}
	s.next = secondsOffset(s.rp.at(s.k))
}

// Peek implements Schedule.
func (s *rampSchedule) Peek() time.Duration { return s.next }

// Next implements Schedule.
func (s *rampSchedule) Next() time.Duration {
	off := s.next
	s.advance()
	return off
}

// SkipBefore implements Schedule.
func (s *rampSchedule) SkipBefore(end time.Duration, most int) int {
	n := 0
	for s.next < end && (most < 0 || n < most) {
		s.Next()
		n++
	}
	return n
}

// Rate implements Schedule: the rate at the next send.
func (s *rampSchedule) Rate() float64 { return s.rp.RateAt(s.next) }

// ScheduleOf returns the open-loop Schedule of a prepared plan's load
// (constant, poisson, gamma, ramp, trace or ladder), seeded seed: the
// intended sends a run of it makes, for tools that plot or check a
// schedule without sending it. A closed or sessions load has none: nil.
func ScheduleOf(ld Load, seed uint64) Schedule {
	switch ld.Model {
	case LoadClosed, LoadSessions, "":
		return nil
	}
	return newSchedule(ld, seed)
}
