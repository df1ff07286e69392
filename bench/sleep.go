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
// time itself.
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
	// quietGap is the mean time between sends from which the open loop
	// counts as quiet: its waits are on the fine timer (and spin), and
	// its idle workers wait on their wakers (see pool.quiet), not their
	// channels. Below it (above 9,090 sends/s) the sends keep the process
	// busy, so the runtime checks its timers between goroutines and wakes
	// the sender on time without a fine timer, and a waker would wait for
	// a busy thread to look at the poller. Against scripts/loopserver on
	// 2 cores at 6,000/s, the fine timer with the wakers cut the lag p90
	// from 1.12-1.14 to 0.05-0.06 ms and its p99 from 1.61-2.50 to
	// 0.68-0.86 ms, at 119-122 against 106-118 µs of client CPU per
	// request; the fine timer without the wakers cost 143-145 µs (a
	// second thread woken to run each worker). At 10,000/s both left the
	// lag p99 at 2.4-15.7 ms, against 2.2-4.6 ms without either. The
	// choice follows the mean, not each gap: Poisson arrivals at 1,000/s
	// have gaps under any bound, and on the runtime's timer alone such a
	// wait on an idle machine ends up to a millisecond late.
	quietGap = 110 * time.Microsecond
	// gapWeight is the weight of the moving mean of the time between
	// sends: each new gap moves it by 1/gapWeight of the difference.
	gapWeight = 16
)

// sleeper sleeps until absolute times on one reusable timer and, where
// there is one, one fine timer. It belongs to one goroutine.
type sleeper struct {
	t    *time.Timer
	fine fineTimer // nil: none on this system, or it could not be made
	spin time.Duration
	// prev is the previous wait's time (for spinShare; zero before the
	// first), and meanGap the moving mean of the time between two (see
	// quietGap), the first gap its seed.
	prev    time.Time
	meanGap time.Duration
	// plain: sleep on the runtime's timer alone (no fine timer, no spin).
	plain bool
}

// fineTimer is a timer precise to microseconds: wait blocks the goroutine
// (not its thread) for d.
type fineTimer interface {
	wait(d time.Duration) error
	close()
}

// newSleeper returns a sleeper that spins the last spin of each wait, at
// most spinShare of the time between two waits; a negative spin sleeps on
// the runtime's timer alone (no fine timer, no spin).
func newSleeper(spin time.Duration) *sleeper {
	t := time.NewTimer(time.Hour)
	t.Stop()
	s := &sleeper{t: t, spin: max(spin, 0), plain: spin < 0}
	if !s.plain {
		if f, err := newFineTimer(); err == nil {
			s.fine = f
		}
	}
	return s
}

// spinFor returns how long to spin of a wait of d, sinceLast after the
// previous wait's end: the spin, at most spinShare of the time between
// two sends, or all of a wait under spinAll.
func (s *sleeper) spinFor(d, sinceLast time.Duration) time.Duration {
	if d <= spinAll {
		return d
	}
	return min(s.spin, time.Duration(spinShare*float64(sinceLast)))
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
	if s.plain || !s.quiet() {
		return s.sleep(ctx, d)
	}
	spin := s.spinFor(d, gap)
	lead := spin
	if s.fine != nil {
		lead = max(coarseLead, spin)
	}
	if d > lead && !s.sleep(ctx, d-lead) {
		return false
	}
	if s.fine != nil {
		if d := time.Until(at) - spin; d > 0 && s.fine.wait(d) != nil {
			s.stopFine() // the runtime's timer and the spin from now on
		}
	}
	return ctx.Err() == nil
}

// quiet reports whether the waits are far apart (see quietGap): the
// moving mean of the time between them, or, before a second, the first.
func (s *sleeper) quiet() bool {
	if s.meanGap == 0 {
		return true // no gap yet: the rate is unknown; the fine timer is on time at any rate
	}
	return s.meanGap >= quietGap
}

// sleep sleeps d on the runtime's timer and reports whether ctx is still
// live.
func (s *sleeper) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
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
}

func (s *sleeper) stop() {
	s.t.Stop()
	s.stopFine()
}
