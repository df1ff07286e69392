package bench

import (
	"context"
	"math"
	"math/rand/v2"
	"time"

	"github.com/cloudinfer/cloudinfer/latency"
)

// Schedule is an open loop's rate control: the sender asks it when the
// next request is due. Its answers are offsets from the run's start, an
// absolute schedule: the sender sleeps until the start plus Peek, sends,
// and calls Next, so that a late send (no free in-flight slot, a slow
// dispatcher) never shifts the ones after it; the sends the run owed and
// could not make by its end are counted with SkipBefore. The sender's
// dispatcher owns a Schedule: its methods are called from one goroutine.
//
// A load model is a Schedule: Pacer is the constant-rate and the Poisson
// one. Another open-loop model (a trace replay, gamma arrivals, a ramp)
// is one new type with these four methods, and the Load.Model value that
// names it. A model that reads how its own requests went, as the ladder
// does, is an Adaptive schedule.
type Schedule interface {
	// Peek returns the next intended send's offset without consuming it;
	// Never when there is none.
	Peek() time.Duration
	// Next consumes the next send and returns its offset.
	Next() time.Duration
	// SkipBefore consumes the sends before end, at most most of them (no
	// limit when most < 0), and returns how many it consumed: the sends
	// the run owed and did not make. A schedule with no faster way walks
	// Peek and Next.
	SkipBefore(end time.Duration, most int) int
	// Rate returns the rate scheduled now, in requests per second, for
	// progress displays.
	Rate() float64
}

// Adaptive is a Schedule decided as the run goes, from the outcomes of its
// own requests: the dynamic QPS ladder (see Ladder). It is decided up to
// its horizon (the ladder's current step's end). When the next send lies
// at or past the horizon, and the horizon within the run's duration, the
// sender sleeps until the horizon and calls Decide, which decides the
// schedule's next part. The sender feeds it: Sent is told of each request
// sent, and the Feedback it returns of that request's progress and end.
type Adaptive interface {
	Schedule
	// Horizon returns the offset up to which the schedule is decided;
	// Never when it is decided to its end.
	Horizon() time.Duration
	// Decide is called at the horizon, at wall-clock time now: it decides
	// the schedule's next part, moves the horizon to its end and returns
	// the rate scheduled from the old horizon on.
	Decide(now time.Time) float64
	// Sent is called as a request intended at intended is sent; the
	// Feedback it returns (nil: none) is told how the request goes.
	Sent(intended time.Time) Feedback
	// Finish is called once, when the run's calls are over (ended or
	// cut), with the offset at which the run stopped sending: its stop,
	// or the first send it reached and did not make, whichever came
	// first. It returns the trace of the schedule's decisions (nil: none).
	Finish(stop time.Duration) *LadderTrace
}

// Feedback is told how one request of an Adaptive schedule goes. Its
// methods are called from the request's goroutine, concurrently with the
// other requests' and with the schedule's own methods.
type Feedback interface {
	// FirstContent is called once, when a stream's first content chunk
	// arrives, with its arrival time; not for a request that is not
	// streamed, nor for a stream with no content.
	FirstContent(at time.Time)
	// End is called once, as the request ends, with its measured sample;
	// cut is set when the run canceled it at its end (Options.Drain): it
	// then measures the run's stop, not the endpoint. s is the run's
	// until End returns (it is reused): copy what is kept of it.
	End(s *latency.Sample, cut bool)
}

var _ Schedule = (*Pacer)(nil)

// planned is a Schedule decided in advance, as an Adaptive that decides
// and reads nothing.
type planned struct{ Schedule }

func (planned) Horizon() time.Duration            { return Never }
func (p planned) Decide(time.Time) float64        { return p.Rate() }
func (planned) Sent(time.Time) Feedback           { return nil }
func (planned) Finish(time.Duration) *LadderTrace { return nil }

// newSchedule returns the schedule of an open-loop load ld (constant,
// Poisson, gamma, ramp, trace or ladder); seed seeds its random draws.
func newSchedule(ld Load, seed uint64) Adaptive {
	switch ld.Model {
	case LoadLadder:
		return newLadderPacer(ld.Ladder, seed)
	case LoadPoisson:
		return planned{NewPacer(Poisson, ld.Rate, seed)}
	case LoadGamma:
		return planned{NewGamma(ld.Rate, ld.Burstiness, seed)}
	case LoadRamp:
		return planned{ld.Ramp.schedule(seed)}
	case LoadTrace:
		return planned{newTraceSchedule(ld.Trace.trace, ld.Trace.Speed)}
	default:
		pc := NewPacer(Uniform, ld.Rate, seed)
		if ld.phase > 0 {
			pc.Rebase(ld.phase, ld.Rate) // a shard's sends, between the others'
		}
		return planned{pc}
	}
}

// feedbackKey is the context key of a request's Feedback.
type feedbackKey struct{}

// withFeedback returns ctx carrying fb, for the collector and the stream
// reader to find; ctx itself when fb is nil.
func withFeedback(ctx context.Context, fb Feedback) context.Context {
	if fb == nil {
		return ctx
	}
	return context.WithValue(ctx, feedbackKey{}, fb)
}

// feedbackOf returns the Feedback ctx carries, or nil.
func feedbackOf(ctx context.Context) Feedback {
	fb, _ := ctx.Value(feedbackKey{}).(Feedback)
	return fb
}

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

// Pacer computes an open-loop schedule at a rate, constant (Uniform) or
// Poisson: the intended send time of every request, as an offset from the
// run's start. It is a Schedule; Rebase changes its rate (the ladder's
// steps). Offsets are computed from an
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
