package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// Options configures Run.
type Options struct {
	// Connect returns the client a target's requests go through; Run
	// closes it when the target is done. Required.
	Connect func(ctx context.Context, t *Target) (*cloudreq.Client, error)
	// Progress, when set, is told about each target's run as it goes
	// (see NewProgress).
	Progress Progress
	// Drain bounds the wait for requests still in flight when a target's
	// limit is reached or the run is interrupted (default 30 s). Those
	// still running then are canceled by the run and counted apart, as
	// TargetResult.Cut: they are neither the endpoint's failures nor its
	// successes.
	Drain time.Duration
	// Abort, when closed, ends an interrupted run's drain at once (a
	// second Ctrl-C): the calls in flight are canceled and counted as Cut.
	Abort <-chan struct{}
	// Observers see the measured calls (not the warm-up's), after the
	// run's own collector: telemetry, for instance.
	Observers []cloudreq.Observer
	// ServerMetrics, when set, returns more /metrics URLs to scrape for a
	// target (see Target.ServerMetrics): the embedded emulator's, say.
	ServerMetrics func(*Target) []string
}

// Progress receives a run's live state. Implementations must not block.
type Progress interface {
	// Begin is called when a target's measured run starts.
	Begin(target string, total int, duration time.Duration)
	// Update is called a few times a second.
	Update(Snapshot)
	// End is called when the target's run is over.
	End()
}

// Snapshot is a target's live state, for progress displays.
type Snapshot struct {
	Target  string
	Elapsed time.Duration
	// Sent and Done count measured requests sent and finished.
	Sent, Done int64
	Errors     int64
	// Rate is the completion rate over the last second or so.
	Rate float64
	// P95 is the p95 of E2E so far (0 before the first success).
	P95 time.Duration
	// Scheduled is the open loop's current rate (0 for a closed loop).
	Scheduled float64
}

// DefaultDrain is Options.Drain's default.
const DefaultDrain = 30 * time.Second

// Run prepares p and benchmarks its targets one after another. A target
// that cannot be reached, or whose every request failed, still has its
// result: errors are part of what a benchmark measures. A canceled context
// ends the run early: no request is sent after it, the requests in flight
// are waited for (at most Options.Drain, or until Options.Abort), and the
// result holds the targets measured so far, the interrupted one with a
// warning, and Interrupted is set. Run returns an error only for a plan
// that cannot run.
func Run(ctx context.Context, p *Plan, opts Options) (*Result, error) {
	if err := p.Prepare(); err != nil {
		return nil, err
	}
	if opts.Connect == nil {
		return nil, errcodes.New(errcodes.InvalidParam, "bench: Options.Connect is required")
	}
	if opts.Drain <= 0 {
		opts.Drain = DefaultDrain
	}
	res := newResult(p)
	if p.Parallel {
		var all *allTargets
		if opts.Progress != nil {
			// One bar for the targets together: they run at once.
			all = &allTargets{inner: opts.Progress, n: len(p.Targets), last: map[string]Snapshot{}}
			opts.Progress = all
			defer all.finish()
		}
		trs := make([]*TargetResult, len(p.Targets))
		errs := make([]error, len(p.Targets))
		var wg sync.WaitGroup
		for i := range p.Targets {
			wg.Go(func() { trs[i], errs[i] = runTarget(ctx, p, &p.Targets[i], opts) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		for _, tr := range trs {
			if tr != nil {
				res.Targets = append(res.Targets, tr)
			}
		}
		res.Interrupted = ctx.Err() != nil
		res.finish()
		return res, nil
	}
	for i := range p.Targets {
		tr, err := runTarget(ctx, p, &p.Targets[i], opts)
		if err != nil {
			return nil, err
		}
		if tr != nil {
			res.Targets = append(res.Targets, tr)
		}
		if ctx.Err() != nil {
			res.Interrupted = true
			break
		}
	}
	res.finish()
	return res, nil
}

// target is one target's run.
type target struct {
	plan   *Plan
	t      *Target
	opts   Options
	client *cloudreq.Client
	col    *collector
	// measured are the call options of a measured call: the collector
	// and the run's observers see it.
	measured []func(*cloudreq.CallOptions)

	pickMu     sync.Mutex
	picker     *Picker
	warmPicker *Picker // the warm-up's deck; nil without a mix
	bases      map[*Class]*cloudreq.CloudRequest
	base       *cloudreq.CloudRequest
	// shape, when set, gives measured request i (from 0, in send order;
	// -1: a warm-up request) its own prompt and output length: a trace's
	// record, a prefix group's prompt.
	shape  func(r *cloudreq.CloudRequest, i int)
	shaped atomic.Int64
	// named gives each request an X-Request-Id of its own (a spans
	// file's join, Target.ServerRequests).
	named bool

	sent atomic.Int64
}

func runTarget(ctx context.Context, p *Plan, t *Target, opts Options) (*TargetResult, error) {
	tg := &target{plan: p, t: t, opts: opts}
	col, err := newCollector(p, t)
	if err != nil {
		return nil, err
	}
	tg.col = col
	tg.measured = []func(*cloudreq.CallOptions){func(o *cloudreq.CallOptions) {
		o.Observers = append(append(o.Observers, tg.col), opts.Observers...)
	}}
	tg.base = buildRequest(t, nil)
	tg.shape = newShaper(p, t)
	tg.named = t.ServerRequests != ""
	if p.Mix != nil {
		size := DeckSize
		if n := p.Limits.Requests; n > 0 && n < size {
			size = n
		}
		tg.picker = newPicker(p.Mix, p.Seed, size)
		tg.bases = map[*Class]*cloudreq.CloudRequest{}
		for i := range p.Mix.Classes {
			c := &p.Mix.Classes[i]
			tg.bases[c] = buildRequest(t, c)
		}
	}
	client, err := opts.Connect(ctx, t)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil
		}
		tr := col.result()
		tr.Fatal = errcodes.From(err).Error() // "CODE: message", the code once
		return tr, nil
	}
	tg.client = client
	defer client.Close()
	sm := startServerMetrics(ctx, p, t, opts, col) // before the warm-up: a baseline
	defer sm.close(ctx)

	if p.Limits.Warmup > 0 && p.Mix != nil {
		// The warm-up draws from a deck of its own: the measured deck's
		// shares stay exact.
		tg.warmPicker = newPicker(p.Mix, p.Seed^warmupSeed, min(p.Limits.Warmup, DeckSize))
	}
	for range p.Limits.Warmup {
		if ctx.Err() != nil {
			break
		}
		tg.do(ctx, tg.warmRequest(), false)
	}
	if ctx.Err() != nil {
		tr := tg.col.result()
		tr.Warnings = append(tr.Warnings, "interrupted during the warm-up: nothing was measured")
		return tr, nil
	}

	sm.mark(ctx) // the measured window's first scrape
	cpu0 := processCPU()
	busy0, total0, mok := machineCPU()
	gc0 := sampleGC()
	tg.col.begin(time.Now())
	stopProgress := tg.progress()
	switch p.Load.Model {
	case LoadClosed:
		tg.closed(ctx)
	case LoadSessions:
		tg.sessions(ctx)
	default:
		tg.open(ctx)
	}
	stopProgress()
	tr := tg.col.result()
	tr.CPU = cpuShare(processCPU()-cpu0, tr.Wall.D())
	gcs, pause := sampleGC().since(gc0)
	tr.GCs, tr.GCPauseMax = gcs, Duration(pause)
	tr.MachineCPU = -1
	if busy1, total1, ok := machineCPU(); ok && mok && total1 > total0 {
		tr.MachineCPU = float64(busy1-busy0) / float64(total1-total0)
	}
	tr.warnings(p)
	sm.finish(ctx, tr)
	if ctx.Err() != nil {
		tr.Warnings = append(tr.Warnings, fmt.Sprintf("interrupted after %v: the figures cover the requests sent until then",
			tr.Wall.D().Round(time.Millisecond)))
	}
	return tr, nil
}

// warmupSeed sets the warm-up deck's seed apart from the measured one's.
const warmupSeed = 0x5bd1e995

// warmRequest returns the next warm-up request.
func (tg *target) warmRequest() *cloudreq.CloudRequest {
	if tg.warmPicker == nil {
		r := *tg.base
		if tg.shape != nil {
			tg.shape(&r, -1)
		}
		return &r
	}
	pk := tg.warmPicker.Next()
	r := *tg.bases[pk.Class]
	r.Tags = pk.Tags
	if tg.shape != nil {
		tg.shape(&r, -1)
	}
	return &r
}

// drain waits for the calls in flight to end (done closed) at most Drain,
// or, once ctx (the run) is interrupted, until Abort; then it marks the
// calls still running as cut by the run and cancels them through cancel.
func (tg *target) drain(ctx context.Context, done <-chan struct{}, cancel context.CancelFunc) {
	t := time.NewTimer(tg.opts.Drain)
	defer t.Stop()
	interrupted := ctx.Done()
	var abort <-chan struct{} // watched once interrupted
wait:
	for {
		select {
		case <-done:
			return
		case <-t.C:
			break wait
		case <-interrupted:
			interrupted, abort = nil, tg.opts.Abort
		case <-abort:
			break wait
		}
	}
	tg.col.cut.Store(true)
	cancel()
	<-done
}

// fill sets *r to the next request to send, measured request i of the
// shape (i < 0: the next in the order fill is called): a worker reuses
// one request for its calls (the client copies what it keeps of it).
func (tg *target) fill(r *cloudreq.CloudRequest, intended time.Time, i int) {
	base := tg.base
	var tags map[string]string
	if tg.picker != nil {
		tg.pickMu.Lock()
		pk := tg.picker.Next()
		tg.pickMu.Unlock()
		base, tags = tg.bases[pk.Class], pk.Tags
	}
	*r = *base
	r.IntendedSend = intended
	r.Tags = tags
	if tg.named {
		r.RequestID = newRequestID()
	}
	if tg.shape != nil {
		if i < 0 {
			i = int(tg.shaped.Add(1) - 1)
		}
		tg.shape(r, i)
	}
}

// do sends one request and reads its response to the end; measured calls
// are seen by the collector through the client's observer hook.
func (tg *target) do(ctx context.Context, req *cloudreq.CloudRequest, measured bool) {
	var opt []func(*cloudreq.CallOptions)
	if measured {
		opt = tg.measured
	}
	if !tg.t.Stream {
		_, _ = tg.client.Invoke(ctx, req, opt...)
		return
	}
	s, err := tg.client.Stream(ctx, req, opt...)
	if err != nil {
		return
	}
	// A stream is bounded by the server's output and the call's context.
	// The first content chunk of an Adaptive schedule's request is told to
	// its Feedback as it comes: the ladder's TTFT read counts it while the
	// stream goes on.
	fb, first := feedbackOf(ctx), false
	for s.Next() {
		if fb != nil && !first && s.Chunk().Content {
			first = true
			fb.FirstContent(s.Chunk().At)
		}
	}
	_ = s.Close()
}

// closed runs the closed loop: Concurrency workers, each sending when its
// previous request ends, until a limit. The calls in flight when the
// duration ends, or the run is interrupted, are drained.
func (tg *target) closed(ctx context.Context) {
	lim := tg.plan.Limits
	stop, cancelStop := ctx, context.CancelFunc(func() {})
	if lim.Duration > 0 {
		stop, cancelStop = context.WithDeadline(ctx, tg.col.start.Add(lim.Duration.D()))
	}
	defer cancelStop()
	callCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	var wg sync.WaitGroup
	for range tg.plan.Load.Concurrency {
		wg.Go(func() {
			var req cloudreq.CloudRequest
			// The worker's own context under callCtx: each call's
			// context (its timeout) is then a child of the worker's,
			// whose lock and set of children no other worker touches.
			// A child of callCtx itself locked callCtx's mutex, shared
			// by every worker, twice a call.
			wctx, wcancel := context.WithCancel(callCtx)
			defer wcancel()
			for stop.Err() == nil {
				if n := tg.sent.Add(1); lim.Requests > 0 && n > int64(lim.Requests) {
					return
				}
				tg.col.sent.Add(1)
				tg.fill(&req, time.Time{}, -1)
				tg.do(wctx, &req, true)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-stop.Done():
	}
	tg.drain(ctx, done, cancel)
}

// open runs an open loop: a dispatcher sleeps until each intended send
// time of the load's Schedule and hands the request to a worker, an idle
// one or a new one, at most MaxInFlight of them (see pool). A send that
// finds every worker busy at the cap waits for one: it is late, and its
// lag is measured; it is never dropped, but a send not made by the
// duration's end (plus LateAfter) is not made at all, and is counted as
// unsent. An Adaptive schedule is woken at its horizon to decide what
// follows, and told of each request it sent.
func (tg *target) open(ctx context.Context) {
	p := tg.plan
	ld := p.Load
	sch := newSchedule(ld, p.Seed)
	tg.col.setScheduled(sch.Rate())

	callCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	workers := newPool(callCtx, tg, ld.MaxInFlight)
	start := tg.col.start
	limit := p.Limits.Duration.D()
	// Sends due before the duration's end are made until LateAfter past
	// it; those the loop could not make by then (the target or the
	// in-flight cap could not keep up) are counted as unsent.
	sendCtx, cancelSend := ctx, context.CancelFunc(func() {})
	if limit > 0 {
		sendCtx, cancelSend = context.WithDeadline(ctx, start.Add(limit+ld.LateAfter.D()))
	}
	defer cancelSend()
	sleep := newSleeper(ld.SendSpin.D(), ld.SendWindow.D())
	defer sleep.stop()
	n := 0
	stopped := time.Duration(-1) // when the schedule stopped, if by the duration
	var last *worker             // the worker handed the previous send (see worker.hand)
	for sendCtx.Err() == nil {
		off := sch.Peek()
		// The schedule is decided up to its horizon (a ladder step's end):
		// a send at or past it waits for the decision there, unless the
		// duration ends first (then the part decided is partial, and the
		// run ends in it). A part that ends with the duration is decided,
		// and the run ends there.
		if h := sch.Horizon(); h < Never && off >= h && (limit == 0 || h <= limit) {
			if !sleep.until(ctx, start.Add(h)) {
				break
			}
			r := sch.Decide(time.Now())
			if limit > 0 && h >= limit {
				break
			}
			tg.col.setScheduled(r)
			continue
		}
		if limit > 0 && off >= limit {
			stopped = limit
			break
		}
		if p.Limits.Requests > 0 && n >= p.Limits.Requests {
			break
		}
		at := start.Add(off)
		// The last stretch of the wait (the spin) is the worker's: it is
		// handed the send before it is due, and so is running when it is.
		if workers.stillClock.Load() && !sleep.plain {
			sleep.stillClock() // a worker's spin found a fake clock
		}
		slept := sleep.slept
		if !sleep.before(sendCtx, at) {
			break
		}
		workers.setCrowded(sleep.crowded())
		// A send due since the dispatcher last woke, and less than a
		// span late, follows the previous one (see worker.hand).
		after := last
		if sleep.slept != slept || time.Since(at) >= sleep.span() {
			after = nil
		}
		w := workers.get(sendCtx)
		if w == nil {
			break
		}
		sch.Next()
		n++
		tg.sent.Add(1)
		tg.col.sent.Add(1)
		j := job{fb: sch.Sent(at), at: at, i: -1}
		if tg.shape != nil {
			j.i = int(tg.shaped.Add(1) - 1) // in send order
		}
		w.hand(j, after)
		last = w
	}
	if stopped < 0 {
		stopped = time.Since(start)
	}
	reached := sch.Peek() // the first send not made
	var unsent int64
	// An interrupted run leaves nothing unsent: the rest of its schedule
	// was not due to run.
	if ctx.Err() == nil && limit > 0 {
		// The rest of the schedule due before the duration's end (and
		// before its horizon, a ladder's current step's end: what lies
		// past it was never decided), within the request limit; none when
		// the loop ran to a limit, all it owed when it stopped at the send
		// deadline (at a send, or between two).
		end := min(limit, sch.Horizon())
		most := -1
		if p.Limits.Requests > 0 {
			most = max(p.Limits.Requests-n, 0)
		}
		unsent = int64(sch.SkipBefore(end, most))
	}
	tg.col.unsent.Store(unsent)
	tg.col.capWaits.Store(workers.capWaits)
	done := make(chan struct{})
	go func() { workers.close(); close(done) }()
	tg.drain(ctx, done, cancel)
	// The run stopped sending when it stopped, or when the schedule fell
	// behind, whichever came first.
	tg.col.ladderTrace = sch.Finish(min(stopped, reached))
}

// job is one send an open loop hands to a worker: an Adaptive
// schedule's Feedback for it (nil: none), its intended send time (which
// may be a spin away yet) and its index in send order for the request's
// shape (-1: none).
type job struct {
	fb Feedback
	at time.Time
	i  int
}

// worker is one of an open loop's senders: a goroutine that makes the
// calls it is handed one after another, with one request it reuses. A
// goroutine per call would grow a fresh stack through the HTTP stack's
// depth on every call; a worker's stays grown.
type worker struct {
	in chan job // buffered 1: the dispatcher never waits on it
	// wk, where there is one, is what the worker parks on between calls
	// (see pool.wakers), and what hand and close signal after the send
	// on in. Set before the worker starts, never changed.
	wk waker
	// onWaker: the worker, idle, waits on wk, not on in: wk is there and
	// a wait of it has not failed. The worker sets it as it comes idle
	// (under the pool's lock), and the dispatcher reads it once it has
	// taken the worker, before the send that lets the worker set it
	// again.
	onWaker bool
	// then is the worker that this one signals as it takes its send (see
	// hand): nil, another worker, or tookSend once it has taken it.
	then atomic.Pointer[worker]
	req  cloudreq.CloudRequest
}

// tookSend marks a worker's then once it has taken its send.
var tookSend = new(worker)

// maxWakers is how many of an open loop's workers have a waker (a
// descriptor each, beside each one's connection); the rest wait on their
// channels.
const maxWakers = 1024

// waker wakes one goroutine parked in wait: a signal before the wait
// ends it at once, and one wait consumes every signal before it. Its
// methods but wait are the signaller's; close follows the last of them
// and the wait's end.
type waker interface {
	signal()
	wait() error
	close()
}

// hand gives w its next send. w is idle, so in is empty: the send does
// not wait, and, where w waits on its waker, wakes nothing either. With
// after (the worker handed the send before, in the same wake), w on its
// waker is signalled by after as after takes its own send, if it has
// not yet (after may be w itself, come idle since: then w is signalled
// by hand, as it follows no one): wakers signalled together are all ready at the poller's next
// look, and the runtime wakes another thread for each but the first,
// where one after another they run on the thread that looks. Otherwise
// hand signals w.
func (w *worker) hand(j job, after *worker) {
	w.then.Store(nil)
	signal := w.onWaker
	w.in <- j
	if !signal {
		return
	}
	if after != nil && after != w && after.then.CompareAndSwap(nil, w) {
		return
	}
	w.wk.signal()
}

// took is w's, as it takes a send: it signals the worker handed the send
// after w's to follow it, if there is one yet, and marks w's send taken.
func (w *worker) took() {
	if next := w.then.Swap(tookSend); next != nil && next != tookSend {
		next.wk.signal()
	}
}

// next returns w's next send, false once in is closed. A worker on its
// waker (wk, w's own, nil once a wait of it failed) waits on it until in
// holds something (a wake that finds nothing was for a send an earlier
// look took); otherwise it waits on the channel.
func (w *worker) next(wk *waker) (job, bool) {
	for w.onWaker && *wk != nil {
		select {
		case j, ok := <-w.in:
			return j, ok
		default:
		}
		if (*wk).wait() != nil {
			*wk = nil // hand signals a waker no longer waited on; the channel wakes w
		}
	}
	j, ok := <-w.in
	return j, ok
}

// pool is an open loop's workers: as many as its calls have been in
// flight at once, at most max. The dispatcher takes an idle one (the one
// that came idle last: its stack and connection are the warmest), or
// starts a new one under the cap, or at the cap waits for one to come
// free.
type pool struct {
	// ctx is the calls' context: each worker's own is a child of it (see
	// run).
	ctx context.Context
	tg  *target
	max int
	// wakers: each worker has a waker of its own, and waits on it when
	// idle, where the system has them and the clock moves (a
	// testing/synctest bubble's advances only when every goroutine waits
	// on something in the bubble, which a descriptor in the poller is
	// not). A channel send to a waiting goroutine wakes a second thread
	// to run it, and that wake, and the thread's sleep after it, cost
	// more than the send itself; a waker's signal is seen by the thread
	// that next looks at the poller, the one the dispatcher's wait puts
	// there.
	wakers bool

	mu      sync.Mutex
	idle    []*worker
	all     []*worker
	waiting bool          // the dispatcher waits on free
	free    chan struct{} // buffered 1: a worker came idle
	wg      sync.WaitGroup
	// capWaits counts the sends that found every worker busy at the cap
	// (the dispatcher's alone: read after the loop).
	capWaits int64
	// stillClock is set once a worker found the clock standing still
	// while it spun (a testing/synctest bubble's): the workers then wait
	// for their sends on the runtime's timer.
	stillClock atomic.Bool
	// crowded is set while the dispatcher's sends are crowded (see
	// sleeper.crowded): a worker that comes idle then waits on its
	// channel, not its waker, as the poller's wakes wait for the run
	// queues to run dry. The dispatcher's alone to set.
	crowded atomic.Bool
}

// setCrowded sets crowded to c, where it changes.
func (p *pool) setCrowded(c bool) {
	if p.crowded.Load() != c {
		p.crowded.Store(c)
	}
}

func newPool(ctx context.Context, tg *target, max int) *pool {
	return &pool{ctx: ctx, tg: tg, max: max, free: make(chan struct{}, 1), wakers: clockMoves()}
}

// get returns an idle or a new worker, or, at the cap, the first to come
// free; nil when ctx ends first.
func (p *pool) get(ctx context.Context) *worker {
	capped := false
	for {
		p.mu.Lock()
		if n := len(p.idle); n > 0 {
			w := p.idle[n-1]
			p.idle = p.idle[:n-1]
			p.mu.Unlock()
			return w
		}
		if len(p.all) < p.max {
			w := &worker{in: make(chan job, 1)}
			if p.wakers && len(p.all) < maxWakers {
				if wk, err := newWaker(); err == nil {
					w.wk = wk
				} else {
					p.wakers = false // none made now will be later
				}
			}
			p.all = append(p.all, w)
			p.mu.Unlock()
			p.wg.Go(func() { p.run(w) })
			return w
		}
		p.waiting = true
		p.mu.Unlock()
		if !capped {
			capped = true
			p.capWaits++
		}
		select {
		case <-p.free:
		case <-ctx.Done():
			p.mu.Lock()
			p.waiting = false
			p.mu.Unlock()
			return nil
		}
	}
}

// run makes w's calls until its channel is closed, each in a child of
// w's own context under the pool's (so that a call's context, its
// timeout, locks only w's, as in the closed loop).
func (p *pool) run(w *worker) {
	wctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	wk := w.wk
	for {
		j, ok := w.next(&wk)
		if !ok {
			return
		}
		w.took()
		p.due(j.at)
		p.tg.fill(&w.req, j.at, j.i)
		p.tg.do(withFeedback(wctx, j.fb), &w.req, true)
		p.comeIdle(w, wk != nil)
	}
}

// comeIdle puts w, its call over, back with the idle workers, to wait
// on its waker where it has one (withWaker) and the sends are not
// crowded, else on its channel; and frees the dispatcher if it waits for
// a worker.
func (p *pool) comeIdle(w *worker, withWaker bool) {
	p.mu.Lock()
	w.onWaker = withWaker && !p.crowded.Load()
	p.idle = append(p.idle, w)
	if p.waiting {
		p.waiting = false
		select {
		case p.free <- struct{}{}:
		default:
		}
	}
	p.mu.Unlock()
}

// due waits until at, the end of a send's wait, which the dispatcher
// left to the worker to spin (see sleeper.before); at once when it is
// past.
func (p *pool) due(at time.Time) {
	if !p.stillClock.Load() {
		if spinUntil(at) {
			return
		}
		p.stillClock.Store(true)
	}
	time.Sleep(time.Until(at))
}

// close ends the workers once their calls are done, and waits for them.
// Each with a waker is signalled after its channel is closed, so that
// one waiting on it wakes to find the channel closed; the wakers are
// closed once every worker has returned (a signal after that would write
// to a descriptor closed, or reused).
func (p *pool) close() {
	p.mu.Lock()
	all := p.all
	for _, w := range all {
		close(w.in)
		if w.wk != nil {
			w.wk.signal()
		}
	}
	p.mu.Unlock()
	p.wg.Wait()
	for _, w := range all {
		if w.wk != nil {
			w.wk.close()
		}
	}
}

// progress starts the progress updates and returns their stop.
func (tg *target) progress() func() {
	pr := tg.opts.Progress
	if pr == nil {
		return func() {}
	}
	pr.Begin(tg.t.Name, tg.plan.Limits.Requests, tg.plan.Limits.Duration.D())
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tk := time.NewTicker(250 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				pr.Update(tg.col.snapshot())
				return
			case <-tk.C:
				pr.Update(tg.col.snapshot())
			}
		}
	})
	return func() {
		close(stop)
		wg.Wait()
		pr.End()
	}
}
