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
	// fineMinGap is the time between two sends below which a wait is on
	// the runtime's timer alone (no fine timer, no spin). Sends that close
	// keep the process busy, so the runtime checks its timers between
	// goroutines and wakes the sender on time without either: against
	// scripts/loopserver at 8,000/s on 2 cores, the fine timer and spin
	// cost a third more client CPU per request (121 against 87 µs) and
	// left the lag as it was (p99 2.0 against 2.1 ms). At 4,000/s they
	// still pay (lag p50 0.06 against 0.23 ms, p99 0.8 against 1.8 ms).
	fineMinGap = 200 * time.Microsecond
	// wakerMinGap is the mean time between sends from which the open
	// loop's idle workers wait on their wakers, not their channels (see
	// pool.quiet). Against scripts/loopserver on 2 cores, at 4,000/s the
	// wakers cut the client's CPU per request from 121-130 to 84-89 µs
	// and its context switches from 4.3 to 2.0; at 8,000/s, where the
	// channel costs a switch a request, they raised the lag p99 from 1.7
	// ms to 16-401 ms.
	wakerMinGap = 200 * time.Microsecond
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
	last time.Time // the previous wait's end, for spinShare
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
	s := &sleeper{t: t, spin: max(spin, 0), last: time.Now(), plain: spin < 0}
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
	now := time.Now()
	d := at.Sub(now)
	if d <= 0 {
		s.last = now
		return ctx.Err() == nil
	}
	gap := at.Sub(s.last)
	s.last = at
	if s.plain || gap < fineMinGap {
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
