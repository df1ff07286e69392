package bench

import (
	"context"
	"runtime"
	"time"
)

// The open loop's sleeper waits until each intended send time in three
// stretches: the runtime's timer until coarseLead before it (that timer
// can fire up to a millisecond late on an idle machine: the runtime's
// poller waits in whole milliseconds), then, where the system has one, a
// fine timer (Linux's timerfd, woken through the runtime's poller, as
// precise as the kernel's high-resolution timers) until the spin stretch,
// then a spin that yields the processor between clock reads until the
// time itself. Where the sends are closer than its window on average, it
// wakes at most once a window (see sleeper.window).
const (
	// coarseLead is how long before a send the runtime's timer hands over
	// to the fine one.
	coarseLead = 2 * time.Millisecond
	// spinShare bounds the spin to this share of each wait, so that the
	// spin costs at most this share of a core at any rate.
	spinShare = 0.1
	// spinAll is the wait below which the sleeper spins it whole: a timer
	// costs more than the wait.
	spinAll = 10 * time.Microsecond
	// gapWeight is the weight of the moving mean of the time between
	// sends: each new gap moves it by 1/gapWeight of the difference.
	gapWeight = 16
	// slackWeight is how slowly the fine timer's slack falls (see
	// sleeper.slack): each wake that overshoots less moves it by
	// 1/slackWeight of the difference.
	slackWeight = 32
	// maxSlack bounds the slack, so that one long stall (the machine
	// busy elsewhere) does not set it for long.
	maxSlack = time.Millisecond
	// wakeSends is how many sends a wake serves on average where the
	// sends are closer than the window: the wakes are this many mean
	// gaps apart, but no less than half the window (see sleeper.span).
	wakeSends = 4
)

// sleeper sleeps until absolute times on one reusable timer and, where
// there is one, one fine timer. It belongs to one goroutine.
type sleeper struct {
	t    *time.Timer
	fine fineTimer // nil: none on this system, or it could not be made
	spin time.Duration
	// window is the least time between two of the fine timer's wakes
	// while the moving mean of the time between sends is under it (0:
	// none). Each wake, and the thread's sleep after it, costs the
	// process more than the send it serves: on 2 cores against
	// scripts/loopserver, a wake per send at 6,000/s cost 48-57 µs of
	// client CPU per request, against 35-40 µs with a 500 µs window. A
	// send due less than a window after the last wake waits for the
	// next: it goes out late by less than the window (a send a spin
	// away or less goes out at once, the worker spinning to its time).
	// The mean decides, not each gap: Poisson arrivals have short gaps
	// at any rate, and at 1,000/s each still gets a wake of its own.
	// Where wakeSends sends are less than a window apart, the wakes are
	// closer (span): the cost of a wake is then shared by as many sends,
	// and the lag falls with the rate.
	window time.Duration
	// prev is the previous wait's time (for spinShare; zero before the
	// first), and meanGap the moving mean of the time between two (see
	// window), the first gap its seed.
	prev    time.Time
	meanGap time.Duration
	// woke is when the fine timer last woke the sleeper, and slept
	// flips at each of its waits (of either timer): a caller that sees
	// it unchanged across a call knows the call did not sleep.
	woke  time.Time
	slept bool
	// slack is a high-water mark of how late the fine timer wakes (its
	// overshoot): it rises to each later wake at once and falls slowly
	// (slackWeight). The spin is at least the slack, so that a machine
	// whose timers wake late (a virtual machine's can, by 100 µs and
	// more) still sends on time where the spin's share allows.
	slack time.Duration
	// plain: sleep on the runtime's timer alone (no fine timer, no spin).
	plain bool
	// backed is the fine timer with the runtime's timer behind it, for
	// crowded waits (nil until the first; see crowded).
	backed *backedTimer
}

// fineTimer is a timer precise to microseconds: wait blocks the goroutine
// (not its thread) for d.
type fineTimer interface {
	wait(d time.Duration) error
	close()
}

// newSleeper returns a sleeper that spins the last spin of each wait, at
// most spinShare of the time between two waits, and wakes at most once a
// window where the sends are closer than that on average (a window of 0
// or less: a wake for each); a negative spin sleeps on the runtime's
// timer alone (no fine timer, no spin, no window).
func newSleeper(spin, window time.Duration) *sleeper {
	t := time.NewTimer(time.Hour)
	t.Stop()
	s := &sleeper{t: t, spin: max(spin, 0), window: max(window, 0), plain: spin < 0}
	if !s.plain {
		if f, err := newFineTimer(); err == nil {
			s.fine = f
		}
	}
	return s
}

// spinFor returns how long to spin of a wait of d, sinceLast after the
// previous wait's end: the spin or the fine timer's slack, the longer,
// at most spinShare of the time between two sends, or all of a wait
// under spinAll.
func (s *sleeper) spinFor(d, sinceLast time.Duration) time.Duration {
	if d <= spinAll {
		return d
	}
	return min(max(s.spin, s.slack), time.Duration(spinShare*float64(sinceLast)))
}

// span returns the least time between two of the fine timer's wakes
// while the sends are closer than the window on average: wakeSends mean
// gaps, at least half the window and at most the window. With the
// default 500 µs window that is 500 µs up to 8,000/s, 333 µs at
// 12,000/s and 250 µs from 16,000/s. Against scripts/loopserver on 2
// cores at 15,000/s (alternating 10 s runs), the wakes a window apart
// left the lag p50 / p95 at 0.37-0.40 / 0.52 ms for 26.6-33.2 µs of
// client CPU per request, the span 0.22 / 0.29 ms for 30.2-38.7 µs; at
// 4,000/s wakes 250 µs apart (one per send) had cost 71-73 µs per
// request against 43-45 µs a window apart.
func (s *sleeper) span() time.Duration {
	return min(s.window, max(s.window/2, wakeSends*s.meanGap))
}

// noteWake updates the slack with one wake of the fine timer, over late
// (0 or less: on time).
func (s *sleeper) noteWake(over time.Duration) {
	over = min(max(over, 0), maxSlack)
	if over >= s.slack {
		s.slack = over
		return
	}
	s.slack -= (s.slack - over + slackWeight - 1) / slackWeight
}

// until sleeps until at (returning at once when it is past) and reports
// whether ctx is still live.
func (s *sleeper) until(ctx context.Context, at time.Time) bool {
	if !s.before(ctx, at) {
		return false
	}
	if s.plain {
		return true // slept to at on the runtime's timer
	}
	if !spinUntil(at) {
		// The clock stands still while this goroutine runs: a fake one,
		// as in a testing/synctest bubble. Only the runtime's timer moves
		// it.
		s.stillClock()
		return s.sleep(ctx, time.Until(at))
	}
	return ctx.Err() == nil
}

// before sleeps until the last stretch before at that until spins (all
// of it when the sleeper is plain) and reports whether ctx is still live.
// The caller spins the rest (spinUntil): the open loop hands that stretch
// to the worker that sends, which is then awake and on a processor when
// the send is due, instead of being woken at that time.
func (s *sleeper) before(ctx context.Context, at time.Time) bool {
	gap := at.Sub(s.prev) // the most a Duration holds before the first wait
	if !s.prev.IsZero() {
		if s.meanGap == 0 {
			s.meanGap = max(gap, 1)
		} else {
			s.meanGap += (gap - s.meanGap) / gapWeight
		}
	}
	s.prev = at
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err() == nil
	}
	if s.plain {
		return s.sleep(ctx, d)
	}
	spin := s.spinFor(d, gap)
	// wake is when to stop sleeping: a spin before at, or a span after
	// the last wake where the sends are closer than the window and that
	// is later.
	wake := at.Add(-spin)
	if s.fine != nil && s.meanGap < s.window && time.Until(wake) > 0 {
		if next := s.woke.Add(s.span()); next.After(wake) {
			wake = next
		}
	}
	d = time.Until(wake)
	lead := time.Duration(0)
	if s.fine != nil {
		lead = coarseLead
	}
	if d > lead && !s.sleep(ctx, d-lead) {
		return false
	}
	if s.fine != nil {
		if d := time.Until(wake); d > 0 {
			s.slept = !s.slept
			if s.fineWait(d) != nil {
				s.stopFine() // the runtime's timer and the spin from now on
			}
			s.woke = time.Now()
			s.noteWake(s.woke.Sub(wake))
		}
	}
	return ctx.Err() == nil
}

// sleep sleeps d on the runtime's timer and reports whether ctx is still
// live.
func (s *sleeper) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	s.slept = !s.slept
	s.t.Reset(d)
	select {
	case <-s.t.C:
		return ctx.Err() == nil
	case <-ctx.Done():
		s.t.Stop()
		return false
	}
}

// spinStuck is how many clock reads in a row that return the same time
// make spinUntil give up: a real clock moves between two reads a yield
// apart; a fake one stands still while the goroutine runs.
const spinStuck = 10_000

// spinUntil spins until at, yielding the processor between clock reads;
// false when the clock stood still (see spinStuck).
func spinUntil(at time.Time) bool {
	last, same := time.Now(), 0
	for last.Before(at) {
		runtime.Gosched()
		now := time.Now()
		if !now.Equal(last) {
			last, same = now, 0
		} else if same++; same >= spinStuck {
			return false
		}
	}
	return true
}

// clockMoves reports whether the clock moves while this goroutine runs
// (see spinStuck).
func clockMoves() bool {
	first := time.Now()
	for range spinStuck {
		if !time.Now().Equal(first) {
			return true
		}
	}
	return false
}

// stillClock makes the sleeper plain from now on: its caller found the
// clock standing still while spinning (see until).
func (s *sleeper) stillClock() {
	s.plain = true
	s.stopFine()
}

func (s *sleeper) stopFine() {
	if s.fine != nil {
		s.fine.close()
		s.fine = nil
	}
	if s.backed != nil {
		s.backed.close()
		s.backed = nil
	}
}

// crowded reports whether the sends are wakeSends or more to a window on
// average (above 8,000/s by the default window), where the wakes are a
// span apart and each serves several sends. The process is then busy:
// its workers' calls keep the runtime's run queues full, and the
// runtime looks at its poller only when a processor's queue runs dry (or
// its monitor's every 10 ms), so a wake through the poller — the fine
// timer's, a worker's waker — waited for the queues: in an execution
// trace at 15,000/s on 2 cores, the dispatcher, parked on its timerfd
// for a span, was made ready 1.5-4.5 ms after it parked, in most of
// those waits with both processors running workers. The runtime's own timers and channel hand-overs are run at the
// processor's next scheduling, so a crowded wait has the runtime's timer
// behind the fine one, and an idle worker waits on its channel (see
// pool.crowded). Both cost a thread's wake where a processor is idle,
// which at lower rates is most of the time, so they are kept for the
// crowded rates, where a wake's cost is shared by its sends.
func (s *sleeper) crowded() bool {
	return s.window > 0 && s.meanGap > 0 && wakeSends*s.meanGap < s.window
}

// fineWait waits d on the fine timer, and, where the sends are crowded,
// on the runtime's timer beside it: whichever wakes first ends the wait.
func (s *sleeper) fineWait(d time.Duration) error {
	if !s.crowded() {
		return s.fine.wait(d)
	}
	if s.backed == nil {
		f, err := newFineTimer()
		if err != nil {
			return s.fine.wait(d)
		}
		s.backed = newBackedTimer(f)
	}
	s.backed.wait(d, s.t)
	return nil
}

// backedTimer is a fine timer waited on by a goroutine of its own, so
// that a wait can end on the runtime's timer too: a goroutine parked on
// a descriptor in the poller cannot also wait on a channel. Its wait and
// close belong to one goroutine.
type backedTimer struct {
	fine fineTimer
	// req carries the end of the wait to make (buffered 1: a wait never
	// blocks on it; the helper takes it when its last wait is over).
	req chan backedWait
	// done carries the number of each wait the fine timer ended
	// (buffered 1: the helper never blocks on it; a number that finds it
	// full is one that the runtime's timer ended first, and is dropped).
	done   chan uint64
	n      uint64        // the number of the last wait
	exited chan struct{} // closed as the helper returns
}

// backedWait is one wait of a backedTimer: its end and its number.
type backedWait struct {
	at time.Time
	n  uint64
}

func newBackedTimer(f fineTimer) *backedTimer {
	b := &backedTimer{fine: f, req: make(chan backedWait, 1), done: make(chan uint64, 1), exited: make(chan struct{})}
	go b.helper()
	return b
}

// helper waits out each wait on the fine timer and reports its number.
// It returns once req is closed, or the fine timer fails (the runtime's
// timer then ends every wait).
func (b *backedTimer) helper() {
	defer close(b.exited)
	for w := range b.req {
		if d := time.Until(w.at); d > 0 {
			if b.fine.wait(d) != nil {
				return
			}
		}
		select {
		case b.done <- w.n:
		default:
		}
	}
}

// wait waits d: until the fine timer's wake, or t's (stopped, and left
// stopped), whichever comes first.
func (b *backedTimer) wait(d time.Duration, t *time.Timer) {
	select {
	case <-b.done: // a wait the runtime's timer ended
	default:
	}
	b.n++
	select {
	case b.req <- backedWait{time.Now().Add(d), b.n}:
	default: // the helper still on a wait that is over: t ends this one
	}
	t.Reset(d)
	for {
		select {
		case n := <-b.done:
			if n != b.n {
				continue // an earlier wait's
			}
			t.Stop()
		case <-t.C:
		}
		return
	}
}

// close ends the helper, once its wait in progress is over (a crowded
// wait is a span, under a window), then closes the fine timer: closed
// before, its descriptor's number could be another's by the time the
// helper arms it.
func (b *backedTimer) close() {
	close(b.req)
	<-b.exited
	b.fine.close()
}

func (s *sleeper) stop() {
	s.t.Stop()
	s.stopFine()
}
