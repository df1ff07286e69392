package bench

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/latency/stats"
)

// Collection bounds: a result's size does not grow with the run's length.
const (
	// MaxPoints is how many per-request points a target result keeps for
	// charts (a uniform reservoir sample of the requests).
	MaxPoints = 5000
	// MaxBuckets is how many time buckets a series keeps; the bucket width
	// doubles when a run outgrows them.
	MaxBuckets = 240
	// firstBucket is the series' initial bucket width.
	firstBucket = 250 * time.Millisecond
)

// collector is a target run's cloudreq.Observer: it measures every
// finished call once (latency.Measure) and files the sample in the
// target's stats.Recorder, by tag, by time bucket and in the chart
// reservoir.
type collector struct {
	plan  *Plan
	t     *Target
	start time.Time

	sent atomic.Int64
	done atomic.Int64
	errs atomic.Int64
	late atomic.Int64

	// cut is set when the run cancels the calls still in flight at its
	// end; the cancellations that follow are counted in cutN, not
	// measured. unsent counts the open loop's due sends never made.
	cut    atomic.Bool
	cutN   atomic.Int64
	unsent atomic.Int64
	// capWaits counts the open loop's sends that waited for a worker at
	// the in-flight cap.
	capWaits atomic.Int64

	scheduled atomic.Uint64 // float64 bits

	// sessionsOpened and sessionsClosed count the sessions model's
	// stateful sessions (SageMaker).
	sessionsOpened, sessionsClosed atomic.Int64

	ladderTrace *LadderTrace

	rec *stats.Recorder

	// onSample, when set, sees each measured call's sample, response and
	// request id sent (the server metrics' per-request join).
	onSample func(s *latency.Sample, resp *cloudreq.CloudResponse, requestID string)

	mu       sync.Mutex
	tags     map[string]map[string]*TagStats
	turns    []*TurnStats // by turn index − 1 (the sessions model)
	examples map[string]string
	series   *Series
	points   []Point
	seen     int64
	rng      *rand.Rand
	first    time.Time // first send
	last     time.Time // last send
	end      time.Time // last end
	prevSnap Snapshot
	prevAt   time.Time
	rate     float64
}

func newCollector(p *Plan, t *Target) (*collector, error) {
	rec, err := stats.NewRecorder(stats.RecorderOptions{SLAs: p.slas()})
	if err != nil {
		return nil, err
	}
	return &collector{
		plan: p, t: t, rec: rec,
		tags:     map[string]map[string]*TagStats{},
		examples: map[string]string{},
		series:   &Series{Width: Duration(firstBucket)},
		rng:      rand.New(rand.NewPCG(p.Seed, 7)),
	}, nil
}

func (c *collector) begin(t time.Time) {
	c.start = t
	c.prevAt = t
}

func (c *collector) setScheduled(r float64) { c.scheduled.Store(math.Float64bits(r)) }

// calls recycles the calls' observers: one per call in flight.
var calls = sync.Pool{New: func() any { return new(call) }}

// StartCall implements cloudreq.Observer.
func (c *collector) StartCall(ctx context.Context, req *cloudreq.CloudRequest, _ bool) (context.Context, cloudreq.CallObserver) {
	o := calls.Get().(*call)
	*o = call{c: c, class: req.Class, tags: req.Tags, fb: feedbackOf(ctx), requestID: req.RequestID}
	if o.turn = turnOf(ctx); o.turn > 0 && req.Generate != nil {
		n := 0
		for _, m := range req.Generate.Messages {
			n += len(m.Content)
		}
		o.promptTokens = (n + CharsPerToken - 1) / CharsPerToken
	}
	return ctx, o
}

// call is one call's observer.
type call struct {
	c     *collector
	class string
	tags  map[string]string
	fb    Feedback // an Adaptive schedule's request's; nil for other loads
	// turn is a session request's turn (1, 2, …; 0 outside sessions) and
	// promptTokens its prompt's estimated length.
	turn, promptTokens int
	// requestID is the request id the call was given before its hooks.
	requestID string
	// s is the call's sample, made at its end: here, in the pooled call,
	// rather than allocated for each (nothing that is handed it keeps
	// it past EndCall; see Feedback.End).
	s latency.Sample
}

// EndAttempt implements cloudreq.CallObserver.
func (*call) EndAttempt(cloudreq.AttemptInfo) {}

// EndCall implements cloudreq.CallObserver.
func (o *call) EndCall(resp *cloudreq.CloudResponse, tl *latency.Timeline, err *errcodes.Error) {
	out := latency.Outcome{Endpoint: o.c.t.Name, Class: o.class}
	if err != nil {
		out.Err = string(err.Code)
	} else if resp != nil {
		out.Start = resp.Start
		out.OutputTokens = resp.Usage.OutputTokens
		out.TokenSource = latency.TokenSource(resp.Usage.Source)
	}
	o.s = latency.Measure(tl, out)
	s := &o.s
	if err != nil {
		o.c.example(err)
	}
	var send time.Time
	if tl != nil && len(tl.Attempts) > 0 {
		send = tl.Attempts[0].Send
	}
	cut := o.c.add(s, o.tags, send)
	if o.turn > 0 && !cut {
		o.c.addTurn(o.turn, o.promptTokens, s)
	}
	if o.c.onSample != nil && !cut {
		o.c.onSample(s, resp, o.requestID)
	}
	if o.fb != nil {
		o.fb.End(s, cut)
	}
	*o = call{}
	calls.Put(o)
}

// MaxErrorExample bounds a kept error message.
const MaxErrorExample = 300

// example keeps the first message of each error code, for the report.
func (c *collector) example(err *errcodes.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	code := string(err.Code)
	if _, ok := c.examples[code]; ok {
		return
	}
	msg := err.Error()
	if len(msg) > MaxErrorExample {
		msg = msg[:MaxErrorExample] + "…"
	}
	c.examples[code] = msg
}

// sentAt widens the window of first sends by one call's. c.mu is held.
func (c *collector) sentAt(send time.Time) {
	if send.IsZero() {
		return
	}
	if c.first.IsZero() || send.Before(c.first) {
		c.first = send
	}
	if send.After(c.last) {
		c.last = send
	}
}

// add files one measured call and reports whether the run cut it.
func (c *collector) add(s *latency.Sample, tags map[string]string, send time.Time) bool {
	c.done.Add(1)
	if s.Err == string(errcodes.Canceled) && c.cut.Load() {
		c.cutN.Add(1) // the run ended it: not the endpoint's failure
		c.mu.Lock()
		c.sentAt(send) // but it was sent: the send rate counts it
		c.mu.Unlock()
		return true
	}
	if s.Err != "" {
		c.errs.Add(1)
	}
	if lag, ok := s.Value(latency.ScheduleLag); ok && time.Duration(lag) > c.plan.Load.LateAfter.D() {
		c.late.Add(1)
	}
	c.rec.Add(s)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sentAt(send)
	if s.End.After(c.end) {
		c.end = s.End
	}
	for dim, v := range tags {
		m := c.tags[dim]
		if m == nil {
			m = map[string]*TagStats{}
			c.tags[dim] = m
		}
		ts := m[v]
		if ts == nil {
			ts = &TagStats{}
			m[v] = ts
		}
		ts.add(s)
	}
	at := s.Begin
	if at.IsZero() {
		at = s.End
	}
	off := at.Sub(c.start)
	c.series.add(off, s)
	c.seen++
	p := newPoint(off, s)
	if len(c.points) < MaxPoints {
		c.points = append(c.points, p)
	} else if j := c.rng.Int64N(c.seen); j < MaxPoints {
		c.points[j] = p
	}
	return false
}

// addTurn files a session request's sample under its turn.
func (c *collector) addTurn(turn, promptTokens int, s *latency.Sample) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.turns) < turn {
		c.turns = append(c.turns, &TurnStats{Turn: len(c.turns) + 1})
	}
	c.turns[turn-1].add(promptTokens, s)
}

// snapshot returns the live state for progress displays.
func (c *collector) snapshot() Snapshot {
	now := time.Now()
	s := Snapshot{
		Target: c.t.Name, Elapsed: now.Sub(c.start),
		Sent: c.sent.Load(), Done: c.done.Load(), Errors: c.errs.Load(),
		Scheduled: math.Float64frombits(c.scheduled.Load()),
	}
	if e2e := c.rec.Dist(latency.E2E, stats.Filter{}); e2e.Count() > 0 {
		s.P95 = time.Duration(e2e.Quantile(0.95))
	}
	c.mu.Lock()
	if dt := now.Sub(c.prevAt); dt >= time.Second {
		c.rate = float64(s.Done-c.prevSnap.Done) / dt.Seconds()
		c.prevSnap, c.prevAt = s, now
	}
	s.Rate = c.rate
	if c.prevAt.Equal(c.start) && s.Elapsed > 0 {
		s.Rate = float64(s.Done) / s.Elapsed.Seconds() // the first second: the mean so far
	}
	c.mu.Unlock()
	return s
}

// result builds the target's result from what was collected.
func (c *collector) result() *TargetResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.t
	tr := &TargetResult{
		Name: t.Name, Provider: t.Provider, Service: t.Service, Endpoint: publicURL(t.Endpoint),
		Model: t.Model, Action: t.Action, Stream: t.Stream, Network: t.Network,
		Load: c.plan.Load.String(), Begin: c.start,
		Sent: c.sent.Load(), Late: c.late.Load(), Cut: c.cutN.Load(), Unsent: c.unsent.Load(), CapWaits: c.capWaits.Load(), Recorder: c.rec,
		Series: c.series, Points: c.points, Ladder: c.ladderTrace,
		CPU: -1, MachineCPU: -1,
	}
	if !c.start.IsZero() {
		end := c.end
		if c.last.After(end) {
			end = c.last
		}
		if end.After(c.start) {
			tr.Wall = Duration(end.Sub(c.start))
			// The rates of every report are over the wall time: the
			// recorder's window is set to it.
			c.rec.SetWindow(c.start, end)
		}
	}
	if tr.Sent > 1 && c.last.After(c.first) {
		tr.SendRate = float64(tr.Sent-1) / c.last.Sub(c.first).Seconds()
	}
	switch c.plan.Load.Model {
	case LoadConstant, LoadPoisson:
		tr.OfferedRate = c.plan.Load.Rate
	}
	if len(c.tags) > 0 {
		tr.Tags = c.tags
	}
	tr.Turns = c.turns
	tr.SessionsOpened, tr.SessionsClosed = c.sessionsOpened.Load(), c.sessionsClosed.Load()
	if len(c.examples) > 0 {
		tr.ErrorExamples = c.examples
	}
	return tr
}
