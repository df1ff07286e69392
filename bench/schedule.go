package bench

import (
	"math"
	"math/rand/v2"
	"time"
)

// Arrivals is the arrival process of an open-loop schedule.
type Arrivals int

// Arrival processes.
const (
	// Uniform sends at exactly 1/R intervals: t0, t0+1/R, t0+2/R, …
	Uniform Arrivals = iota
	// Poisson sends with exponential inter-arrival times of mean 1/R
	// (seeded, so a run can be repeated).
	Poisson
)

// String returns "constant" or "poisson".
func (a Arrivals) String() string {
	if a == Poisson {
		return "poisson"
	}
	return "constant"
}

// Never is the offset of a send no run reaches. Offsets past what a
// time.Duration holds (at a tiny rate) saturate there instead of wrapping
// around to the past.
const Never = time.Duration(math.MaxInt64)

// Pacer computes an open-loop schedule: the intended send time of every
// request, as an offset from the run's start. Offsets are computed from an
// anchor (the start, or the last rate change) as anchor + k/R, or anchor +
// (sum of exponential draws)/R, so rounding never accumulates and a late
// send never shifts the ones after it. A Pacer is not safe for concurrent
// use; the dispatcher owns it.
type Pacer struct {
	arrivals Arrivals
	rng      *rand.Rand
	rate     float64
	anchor   time.Duration
	k        float64 // events since the anchor (Uniform) or summed Exp(1) draws (Poisson)
	next     time.Duration
}

// NewPacer returns a pacer at rate requests per second, starting at offset
// 0. rate must be positive and at most MaxRate (Plan.Prepare checks it);
// at a rate so low that a send lies beyond time.Duration's range, that
// send's offset is Never.
func NewPacer(arrivals Arrivals, rate float64, seed uint64) *Pacer {
	p := &Pacer{arrivals: arrivals, rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))}
	p.Rebase(0, rate)
	return p
}

// Rate returns the current rate in requests per second.
func (p *Pacer) Rate() float64 { return p.rate }

// Peek returns the next intended offset without consuming it.
func (p *Pacer) Peek() time.Duration { return p.next }

// Next returns the next intended offset and advances the schedule.
func (p *Pacer) Next() time.Duration {
	off := p.next
	p.advance()
	return off
}

// Rebase changes the rate from offset at on. Uniform: the part of an
// interval that was left at the old rate (from at to the next send it
// had scheduled) is left at the new one, so that holding a rate keeps the
// schedule as it was and a step of length T at rate R sends R·T requests;
// a schedule already past at starts at at. Poisson: the next send is at
// at + Exp(1)/rate (memoryless).
func (p *Pacer) Rebase(at time.Duration, rate float64) {
	left := 0.0
	if p.arrivals == Uniform && p.rate > 0 && p.next > at {
		left = min((p.next-at).Seconds()*p.rate, 1)
	}
	p.rate, p.anchor, p.k = rate, at, left
	if p.arrivals == Poisson {
		p.k = p.rng.ExpFloat64()
	}
	p.next = p.offset()
}

// SkipBefore consumes the offsets before end, at most most of them (no
// limit when most < 0), and returns how many it consumed.
func (p *Pacer) SkipBefore(end time.Duration, most int) int {
	if p.next >= end || most == 0 {
		return 0
	}
	if p.arrivals == Uniform {
		// The offsets anchor + (k+j)/rate before end, counted, not walked
		// (then nudged past the rounding of offset).
		at := func(j int) time.Duration { return p.offsetAt(p.k + float64(j)) }
		n := max(int(math.Ceil((end-p.anchor).Seconds()*p.rate-p.k)), 1)
		for n > 1 && at(n-1) >= end {
			n--
		}
		for at(n) < end {
			n++
		}
		if most >= 0 {
			n = min(n, most)
		}
		p.k += float64(n)
		p.next = p.offset()
		return n
	}
	n := 0
	for p.next < end && (most < 0 || n < most) {
		p.advance()
		n++
	}
	return n
}

func (p *Pacer) advance() {
	if p.arrivals == Poisson {
		p.k += p.rng.ExpFloat64()
	} else {
		p.k++
	}
	p.next = p.offset()
}

func (p *Pacer) offset() time.Duration { return p.offsetAt(p.k) }

// offsetAt returns anchor + k/rate, rounded to the nanosecond, or Never.
func (p *Pacer) offsetAt(k float64) time.Duration {
	d := math.Round(k / p.rate * float64(time.Second))
	if !(d < float64(Never-p.anchor)) {
		return Never
	}
	if off := p.anchor + time.Duration(d); off >= p.anchor {
		return off
	}
	return Never
}
