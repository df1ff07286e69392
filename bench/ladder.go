package bench

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/latency/stats"
)

// Ladder is the dynamic QPS ladder. At the end of every
// Step the p95 latency of the step's own requests (those whose intended
// send time falls in it) is read:
//
//   - p95 > HighWater: next rate = max(Floor, current × Backoff);
//   - current < Target and p95 < LowWater: next rate = min(Target, current + Increment);
//   - otherwise the rate holds.
//
// The latency is measured from the intended send time (coordinated-omission
// corrected), so that a request the client could not send on time counts
// its wait. A request of the step still in flight at the step's end counts
// in the read at its age so far; a request of an earlier step that ends
// in this one counts in its own step, never here. Once every request of a
// step has ended, the step's p95 is computed again over all of them: that
// is the figure the trace reports and HighestHeld reads.
//
// The run reports the rate trace and the highest rate held with p95 under
// the high-water mark.
type Ladder struct {
	// Start is the first step's rate (default Floor).
	Start float64 `json:"start,omitempty" yaml:"start,omitempty"`
	// Increment is added to the rate on a climb (default 50 QPS).
	Increment float64 `json:"increment,omitempty" yaml:"increment,omitempty"`
	// Floor is the lowest rate a back-off goes to (default 10 QPS).
	Floor float64 `json:"floor,omitempty" yaml:"floor,omitempty"`
	// Target is the highest rate a climb goes to (default 500 QPS).
	Target float64 `json:"target,omitempty" yaml:"target,omitempty"`
	// Backoff multiplies the rate on a back-off (default 0.7).
	Backoff float64 `json:"backoff,omitempty" yaml:"backoff,omitempty"`
	// Step is how long each rate is held before it is reconsidered
	// (default 10 s).
	Step Duration `json:"step,omitempty" yaml:"step,omitempty"`
	// HighWater and LowWater are the p95 thresholds (defaults 200 ms and
	// 120 ms).
	HighWater Duration `json:"high_water,omitempty" yaml:"high_water,omitempty"`
	LowWater  Duration `json:"low_water,omitempty" yaml:"low_water,omitempty"`
	// Metric is the latency the ladder watches: "e2e" (default) or "ttft",
	// each measured from the intended send time.
	Metric string `json:"metric,omitempty" yaml:"metric,omitempty"`
}

// Ladder defaults.
const (
	DefaultLadderIncrement = 50
	DefaultLadderFloor     = 10
	DefaultLadderTarget    = 500
	DefaultLadderBackoff   = 0.7
	DefaultLadderStep      = 10 * time.Second
	DefaultHighWater       = 200 * time.Millisecond
	DefaultLowWater        = 120 * time.Millisecond
)

// MinLadderStep is the shortest step: a shorter one holds too few requests
// for a p95, and its trace grows without need.
const MinLadderStep = Duration(10 * time.Millisecond)

// WithDefaults returns l with every zero field set to its default.
func (l Ladder) WithDefaults() Ladder {
	if l.Increment == 0 {
		l.Increment = DefaultLadderIncrement
	}
	if l.Floor == 0 {
		l.Floor = DefaultLadderFloor
	}
	if l.Target == 0 {
		l.Target = DefaultLadderTarget
	}
	if l.Backoff == 0 {
		l.Backoff = DefaultLadderBackoff
	}
	if l.Step == 0 {
		l.Step = Duration(DefaultLadderStep)
	}
	if l.HighWater == 0 {
		l.HighWater = Duration(DefaultHighWater)
	}
	if l.LowWater == 0 {
		l.LowWater = Duration(DefaultLowWater)
	}
	if l.Start == 0 {
		l.Start = l.Floor
	}
	if l.Metric == "" {
		l.Metric = MetricE2E
	}
	return l
}

// Validate reports a ladder that cannot run, as ERR_INVALID_PARAM.
func (l Ladder) Validate() error {
	bad := func(format string, args ...any) error {
		return errcodes.Errorf(errcodes.InvalidParam, "bench: ladder: "+format, args...)
	}
	switch {
	case !(l.Floor > 0) || math.IsInf(l.Floor, 0):
		return bad("floor %g must be a positive rate", l.Floor)
	case !(l.Target >= l.Floor) || math.IsInf(l.Target, 0):
		return bad("target %g must be at least the floor %g", l.Target, l.Floor)
	case l.Target > MaxRate:
		return bad("target %g must be at most %g requests/s", l.Target, float64(MaxRate))
	case !(l.Start >= l.Floor && l.Start <= l.Target):
		return bad("start %g must lie between floor %g and target %g", l.Start, l.Floor, l.Target)
	case !(l.Increment > 0) || math.IsInf(l.Increment, 0):
		return bad("step size %g must be positive", l.Increment)
	case !(l.Backoff > 0 && l.Backoff < 1):
		return bad("back-off factor %g must lie in (0, 1)", l.Backoff)
	case l.Step < MinLadderStep:
		return bad("step length %v must be at least %v", l.Step, MinLadderStep)
	case l.LowWater <= 0 || l.HighWater < l.LowWater:
		return bad("need 0 < low-water (%v) <= high-water (%v)", l.LowWater, l.HighWater)
	case l.Metric != MetricE2E && l.Metric != MetricTTFT:
		return bad("metric %q: want %q or %q", l.Metric, MetricE2E, MetricTTFT)
	}
	return nil
}

// LadderAction is what the ladder did after a step.
type LadderAction string

// Ladder actions.
const (
	Hold    LadderAction = "hold"
	BackOff LadderAction = "back-off"
	Climb   LadderAction = "climb"
	// End marks the last step of a run that stopped (its duration or
	// request limit reached) before the step's end: no decision was made.
	End LadderAction = "end"
)

// NextRate is the ladder's rule: the rate of the next step given the
// current rate and the step's p95. ok is false when the step's requests
// gave no latency to read, or when failures filled its p95, which counts
// as over the high-water mark (requests were sent and too few came back
// in time). The function is pure, so the ladder is tested without a
// clock.
func (l Ladder) NextRate(current float64, p95 time.Duration, ok bool) (float64, LadderAction) {
	switch {
	case !ok || p95 > l.HighWater.D():
		return max(l.Floor, current*l.Backoff), BackOff
	case current < l.Target && p95 < l.LowWater.D():
		return min(l.Target, current+l.Increment), Climb
	default:
		return current, Hold
	}
}

// LadderStep is one step of a ladder run's rate trace. Its figures are
// over its own requests, those whose intended send time falls in it,
// wherever they ended.
type LadderStep struct {
	// Index counts from 0.
	Index int `json:"index"`
	// Start is the step's start, as an offset from the run's start.
	Start Duration `json:"start"`
	// Rate is the step's scheduled rate (requests per second).
	Rate float64 `json:"rate"`
	// Sent is how many requests the step sent; Completed how many of them
	// ended before the run's end, Errors how many of those failed, and
	// Cut how many the run canceled at its end (see Options.Drain).
	Sent      int `json:"sent"`
	Completed int `json:"completed"`
	Errors    int `json:"errors"`
	Cut       int `json:"cut,omitempty"`
	// P95 is the p95 of the ladder's metric over the step's requests, once
	// every one has ended, a failure or a cut call counting as slower than
	// any success; P95Known is false when none gave the metric, or when
	// failures and cut calls fill the p95's rank (more than 5% of the
	// step's requests): then P95Failed is set and the step is not held.
	P95       Duration `json:"p95"`
	P95Known  bool     `json:"p95_known"`
	P95Failed bool     `json:"p95_failed,omitempty"`
	// Read is what the ladder read at the step's end, the input of Action
	// (zero for a partial last step).
	Read LadderRead `json:"read,omitzero"`
	// Action and Next are the ladder's decision after the step (End and
	// 0 for a partial last step).
	Action LadderAction `json:"action"`
	Next   float64      `json:"next"`
	// Length is how long a partial last step ran, from its start to the
	// run's stop or the first send it did not make, whichever came first;
	// at most the configured Step; zero for a full step.
	Length Duration `json:"length,omitempty"`
}

// LadderRead is what the ladder read at a step's end: the p95 over the
// step's requests that had ended, and those still in flight, each at its
// age so far (from its intended send time; for the TTFT metric, its TTFT
// once its first content chunk has come).
type LadderRead struct {
	// P95 is the p95 read, a failure counting as slower than any success.
	P95 Duration `json:"p95"`
	// Known is false when there was nothing to read, or when failures
	// filled the p95's rank: then Failed is set.
	Known  bool `json:"known,omitempty"`
	Failed bool `json:"failed,omitempty"`
	// InFlight is how many of the step's requests were in flight.
	InFlight int `json:"in_flight,omitempty"`
}

// LadderTrace is a ladder run's outcome.
type LadderTrace struct {
	Config Ladder       `json:"config"`
	Steps  []LadderStep `json:"steps"`
}

// HighestHeld returns the highest rate of a full step whose requests' p95
// (LadderStep.P95, over all of them once they ended) stayed at or under
// the high-water mark, and false when no step did. A partial last step
// (Action End) did not hold its rate for a step: it does not count.
func (t *LadderTrace) HighestHeld() (float64, bool) {
	best, ok := 0.0, false
	for _, s := range t.Steps {
		if s.Action != End && s.P95Known && !s.P95Failed && s.P95 <= t.Config.HighWater && s.Completed > 0 && s.Rate > best {
			best, ok = s.Rate, true
		}
	}
	return best, ok
}

// String renders the step as "step 0 @10.0/s p95=… (read …) climb →
// 60.0/s" for logs.
func (s LadderStep) String() string {
	p95 := fmtP95(s.P95, s.P95Failed)
	if s.Action == End {
		return fmt.Sprintf("step %d @%.1f/s p95=%s end (partial, %v)", s.Index, s.Rate, p95, s.Length.D())
	}
	return fmt.Sprintf("step %d @%.1f/s p95=%s (read %s, %d in flight) %s → %.1f/s",
		s.Index, s.Rate, p95, fmtP95(s.Read.P95, s.Read.Failed), s.Read.InFlight, s.Action, s.Next)
}

func fmtP95(p95 Duration, failed bool) string {
	if failed {
		return "failed"
	}
	return p95.D().String()
}

// ladderPacer is the ladder as an Adaptive schedule: a uniform Pacer at
// the current step's rate, decided step by step by a ladderRun from the
// step's own requests. At each step's end (its horizon) the step's read
// gives the next step's rate, from which the pacer goes on, carrying the
// phase of its interval (see Pacer.Rebase).
type ladderPacer struct {
	*Pacer
	run *ladderRun
}

var (
	_ Adaptive = (*ladderPacer)(nil)
	_ Feedback = (*ladderCall)(nil)
)

func newLadderPacer(cfg Ladder, seed uint64) *ladderPacer {
	return &ladderPacer{Pacer: NewPacer(Uniform, cfg.Start, seed), run: newLadderRun(cfg)}
}

// Horizon implements Adaptive: the current step's end.
func (lp *ladderPacer) Horizon() time.Duration { return lp.run.next }

// Decide implements Adaptive: it decides the step that ends at the horizon
// from its read at now, and schedules the next step at the rate decided.
func (lp *ladderPacer) Decide(now time.Time) float64 {
	end := lp.run.next
	r := lp.run.step(lp.Rate(), now)
	lp.Rebase(end, r)
	return r
}

// Sent implements Adaptive: the request counts in the current step.
func (lp *ladderPacer) Sent(intended time.Time) Feedback { return lp.run.send(intended) }

// Finish implements Adaptive: the step the run stopped in, when it sent
// any request, is a partial last step that ran until stop (at most a
// step's length); every step's figures are made final.
func (lp *ladderPacer) Finish(stop time.Duration) *LadderTrace {
	start := lp.run.next - lp.run.cfg.Step.D()
	return lp.run.finish(lp.Rate(), min(stop, lp.run.next)-start)
}

// ladderRun is a ladder run's state. The dispatcher owns next; the rest
// is shared with the ends of the calls, under mu.
type ladderRun struct {
	cfg    Ladder
	metric latency.Metric // measured from the intended send
	next   time.Duration  // end of the current step, from the start

	mu    sync.Mutex
	steps []LadderStep // the steps decided so far
	// buckets holds the current step's requests, and those of the decided
	// steps with requests still in flight; a step leaves it once its
	// figures are final.
	buckets map[int]*stepBucket
}

func newLadderRun(cfg Ladder) *ladderRun {
	m := latency.E2EIntended
	if strings.EqualFold(cfg.Metric, MetricTTFT) {
		m = latency.TTFTIntended
	}
	return &ladderRun{cfg: cfg, metric: m, next: cfg.Step.D(), buckets: map[int]*stepBucket{0: newStepBucket()}}
}

// stepBucket collects one step's requests.
type stepBucket struct {
	dist     stats.Dist // the metric's values of the successes
	n        int        // the values in dist
	sent     int
	ended    int
	errors   int
	cut      int
	inFlight map[*ladderCall]struct{}
}

func newStepBucket() *stepBucket { return &stepBucket{inFlight: map[*ladderCall]struct{}{}} }

// ladderCall is one request of a ladder step, from its send to its end:
// its Feedback.
type ladderCall struct {
	run      *ladderRun
	step     int
	intended time.Time
	first    time.Time // its first content chunk's arrival, once seen; under run.mu
}

// send files a request intended at at in the current step.
func (l *ladderRun) send(at time.Time) *ladderCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	lc := &ladderCall{run: l, step: len(l.steps), intended: at}
	b := l.buckets[lc.step]
	b.sent++
	b.inFlight[lc] = struct{}{}
	return lc
}

// FirstContent implements Feedback: it records when the request's first
// content chunk came, for the step's TTFT read.
func (lc *ladderCall) FirstContent(at time.Time) {
	lc.run.mu.Lock()
	defer lc.run.mu.Unlock()
	if lc.first.IsZero() {
		lc.first = at
	}
}

// End implements Feedback: it files the request's measured outcome in its
// step, or, when the run cut it, counts it as slower than any success.
func (lc *ladderCall) End(s *latency.Sample, cut bool) {
	l := lc.run
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[lc.step]
	if b == nil {
		return
	}
	if _, ok := b.inFlight[lc]; !ok {
		return
	}
	delete(b.inFlight, lc)
	switch {
	case cut:
		b.cut++
	case s.Err != "":
		b.ended++
		b.errors++
	default:
		b.ended++
		// A success without the metric (a stream with no content) counts
		// as neither.
		if v, ok := s.Value(l.metric); ok {
			b.dist.Add(v)
			b.n++
		}
	}
	if lc.step < len(l.steps) && len(b.inFlight) == 0 {
		l.finalize(lc.step)
	}
}

// step decides the current step at now, its end, and returns the next
// step's rate.
func (l *ladderRun) step(rate float64, now time.Time) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := len(l.steps)
	b := l.buckets[i]
	rd := b.read(now, l.metric)
	s := LadderStep{Index: i, Start: Duration(l.next - l.cfg.Step.D()), Rate: rate, Read: rd}
	// A step that sent nothing (a rate below one per step) read nothing:
	// it holds.
	s.Action, s.Next = Hold, rate
	if b.sent > 0 {
		s.Next, s.Action = l.cfg.NextRate(rate, rd.P95.D(), rd.Known)
	}
	l.steps = append(l.steps, s)
	l.buckets[i+1] = newStepBucket()
	if len(b.inFlight) == 0 {
		l.finalize(i)
	}
	l.next += l.cfg.Step.D()
	return s.Next
}

// finish closes the run once its calls are over: the step it stopped in,
// when it sent any, becomes a partial last step of length length at rate,
// and every step's figures are made final (a request never ended counts
// as cut).
func (l *ladderRun) finish(rate float64, length time.Duration) *LadderTrace {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := len(l.steps)
	if b := l.buckets[i]; b.sent > 0 {
		start := l.next - l.cfg.Step.D()
		l.steps = append(l.steps, LadderStep{Index: i, Start: Duration(start), Rate: rate, Action: End,
			Length: Duration(min(max(length, 0), l.cfg.Step.D()))})
	}
	for k, b := range l.buckets {
		if k < len(l.steps) {
			b.cut += len(b.inFlight)
			clear(b.inFlight)
			l.finalize(k)
		}
	}
	return &LadderTrace{Config: l.cfg, Steps: l.steps}
}

// finalize writes step k's figures from its bucket, which it drops.
// l.mu is held.
func (l *ladderRun) finalize(k int) {
	b := l.buckets[k]
	s := &l.steps[k]
	s.Sent, s.Completed, s.Errors, s.Cut = b.sent, b.ended, b.errors, b.cut
	p95, known, failed := p95Of(&b.dist, b.n, b.errors+b.cut)
	s.P95, s.P95Known, s.P95Failed = Duration(p95), known, failed
	delete(l.buckets, k)
}

// read returns the step's p95 at now: its requests in flight count at
// their age (for TTFT, at their TTFT once their first content came).
func (b *stepBucket) read(now time.Time, m latency.Metric) LadderRead {
	d, n := &b.dist, b.n
	if len(b.inFlight) > 0 {
		d = b.dist.Copy()
		for lc := range b.inFlight {
			v := now.Sub(lc.intended)
			if m == latency.TTFTIntended && !lc.first.IsZero() {
				v = lc.first.Sub(lc.intended)
			}
			d.Add(int64(v))
		}
		n += len(b.inFlight)
	}
	p95, known, failed := p95Of(d, n, b.errors)
	return LadderRead{P95: Duration(p95), Known: known, Failed: failed, InFlight: len(b.inFlight)}
}

// p95Of returns the p95 of n successes, whose values d holds, and failures
// that count as slower than any success: known is false when there is no
// success or the failures fill the p95's rank (failed).
func p95Of(d *stats.Dist, n, failures int) (p95 time.Duration, known, failed bool) {
	counted := n + failures
	if counted == 0 {
		return 0, false, false
	}
	rank := int(math.Ceil(0.95 * float64(counted) * (1 - 1e-12)))
	if rank > n {
		return 0, false, true
	}
	return time.Duration(d.Quantile(float64(rank) / float64(n))), true, false
}
