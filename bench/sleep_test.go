package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSleeperNeverWakesEarly: whatever the wait — spun whole, on the fine
// timer, on the runtime's timer then the fine one — until returns at or
// after the time it was given, with the spin on and off.
func TestSleeperNeverWakesEarly(t *testing.T) {
	for _, spin := range []time.Duration{DefaultSendSpin, 0, -1} {
		s := newSleeper(spin, DefaultSendWindow)
		for _, d := range []time.Duration{5 * time.Microsecond, 80 * time.Microsecond, 700 * time.Microsecond, 3 * time.Millisecond} {
			for range 5 {
				at := time.Now().Add(d)
				require.True(t, s.until(context.Background(), at))
				assert.False(t, time.Now().Before(at), "spin %v, wait %v: woke early", spin, d)
			}
		}
		s.stop()
	}
}

func TestSleeperStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := newSleeper(DefaultSendSpin, DefaultSendWindow)
	defer s.stop()
	time.AfterFunc(20*time.Millisecond, cancel)
	assert.False(t, s.until(ctx, time.Now().Add(time.Hour)))
	assert.False(t, s.until(ctx, time.Now().Add(-time.Second)), "a past time on a canceled context")
}

// TestSleeperSpinBudget: the spin is the configured one, at most a tenth
// of the time between two sends, and a wait under spinAll is spun whole.
func TestSleeperSpinBudget(t *testing.T) {
	s := newSleeper(50*time.Microsecond, DefaultSendWindow)
	defer s.stop()
	assert.Equal(t, 50*time.Microsecond, s.spinFor(time.Millisecond, time.Millisecond))           // 1,000/s: 5% of a core
	assert.Equal(t, 12500*time.Nanosecond, s.spinFor(125*time.Microsecond, 125*time.Microsecond)) // 8,000/s: 10%
	assert.Equal(t, 50*time.Microsecond, s.spinFor(time.Second, time.Second))                     // 1/s: 0.005%
	assert.Equal(t, 7*time.Microsecond, s.spinFor(7*time.Microsecond, time.Millisecond))
	off := newSleeper(0, DefaultSendWindow)
	defer off.stop()
	assert.Zero(t, off.spinFor(time.Millisecond, time.Millisecond))
}

// TestSleeperSlack: a fine timer seen waking late raises the spin to its
// lateness at once (within the spin's share of the gap), which then falls
// back to the configured spin as the wakes come on time; one long stall
// counts as maxSlack.
func TestSleeperSlack(t *testing.T) {
	s := newSleeper(50*time.Microsecond, DefaultSendWindow)
	defer s.stop()
	s.noteWake(150 * time.Microsecond)
	assert.Equal(t, 150*time.Microsecond, s.spinFor(10*time.Millisecond, 10*time.Millisecond))
	assert.Equal(t, 100*time.Microsecond, s.spinFor(time.Millisecond, time.Millisecond), "the share still bounds it")
	s.noteWake(-time.Millisecond) // on time
	assert.Less(t, s.slack, 150*time.Microsecond)
	assert.Greater(t, s.slack, 140*time.Microsecond, "the slack falls slowly")
	for range 20 * slackWeight {
		s.noteWake(0)
	}
	assert.Zero(t, s.slack)
	assert.Equal(t, 50*time.Microsecond, s.spinFor(10*time.Millisecond, 10*time.Millisecond))
	s.noteWake(time.Hour)
	assert.Equal(t, maxSlack, s.slack)
}

// lateTimer is a fine timer that wakes late by over.
type lateTimer struct{ over time.Duration }

func (l lateTimer) wait(d time.Duration) error { time.Sleep(d + l.over); return nil }
func (lateTimer) close()                       {}

// TestSleeperLearnsSlack: the sleeper takes the slack from its fine
// timer's wakes.
func TestSleeperLearnsSlack(t *testing.T) {
	s := newSleeper(50*time.Microsecond, DefaultSendWindow)
	defer s.stop()
	s.stopFine()
	s.fine = lateTimer{over: 3 * time.Millisecond}
	require.True(t, s.until(context.Background(), time.Now().Add(time.Millisecond)))
	assert.Equal(t, maxSlack, s.slack)
}

// TestSleeperWindow: where the sends are closer than the window on
// average, the fine timer wakes at most once a span (wakeSends mean gaps,
// within half the window and the window), and the sends due in between
// go out at the next wake, none early and none later than a window and a
// wake-up; a send a spin away from a wake goes out at once. Where the
// mean gap is the window or more (1,000/s, constant or Poisson, whose
// gaps are often shorter), each wait is a spin before its own time. With
// a negative window, every wait is.
func TestSleeperWindow(t *testing.T) {
	if f, err := newFineTimer(); err != nil {
		t.Skipf("no fine timer on this system: %v", err)
	} else {
		f.close()
	}
	const window = 2 * time.Millisecond // far above a wake-up's delay
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name    string
		rate    float64
		poisson bool
		window  time.Duration
		span    time.Duration // 0: not batched
	}{
		{"constant 2000/s", 2000, false, window, window},
		{"constant 3000/s", 3000, false, window, 4 * time.Second / 3000},
		{"constant 8000/s", 8000, false, window, window / 2},
		{"poisson 4000/s", 4000, true, window, window / 2},
		{"poisson 200/s", 200, true, window, 0},
		{"constant 2000/s, no window", 2000, false, -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSleeper(DefaultSendSpin, tc.window)
			defer s.stop()
			mean := time.Duration(float64(time.Second) / tc.rate)
			at := time.Now().Add(time.Millisecond)
			var wakes []time.Time
			late, early, short := 0, 0, 0
			for range 300 {
				gap := mean
				if tc.poisson {
					gap = time.Duration(rng.ExpFloat64() * float64(mean))
				}
				if gap < window {
					short++
				}
				at = at.Add(gap)
				woke := s.woke
				require.True(t, s.before(context.Background(), at))
				if !s.woke.Equal(woke) {
					wakes = append(wakes, s.woke)
				}
				if !spinUntil(at) {
					t.Fatal("the clock stood still")
				}
				if lag := time.Since(at); lag > window+time.Millisecond {
					late++
				} else if lag < 0 {
					early++
				}
			}
			assert.Zero(t, early, "sends early")
			gapFloor := tc.span
			if gapFloor == 0 {
				gapFloor = window
			}
			tight := 0 // wakes closer than the span (a wake-up's jitter aside)
			for i := 1; i < len(wakes); i++ {
				if wakes[i].Sub(wakes[i-1]) < gapFloor-50*time.Microsecond {
					tight++
				}
			}
			if tc.span > 0 {
				if !tc.poisson {
					assert.InDelta(t, float64(tc.span), float64(s.span()), float64(time.Microsecond), "span")
					var d []time.Duration
					for i := 1; i < len(wakes); i++ {
						d = append(d, wakes[i].Sub(wakes[i-1]))
					}
					slices.Sort(d)
					require.NotEmpty(t, d)
					assert.Less(t, d[len(d)/2], tc.span+300*time.Microsecond, "the median time between wakes: about a span")
				}
				assert.Zero(t, tight, "wakes closer than the span")
				assert.LessOrEqual(t, late, 30, "sends later than a window and a wake-up (of 300; a busy machine wakes some late)")
				assert.Less(t, len(wakes), 300*int(mean)/int(tc.span)+30, "wakes: a span's worth of sends each")
			} else {
				assert.Greater(t, tight, 30, "the wakes kept a window apart with sends farther apart on average")
				if tc.poisson {
					assert.Greater(t, short, 30, "the schedule had few gaps under the window")
				}
			}
		})
	}
}

// TestSleeperUnderAFakeClock: in a testing/synctest bubble, whose clock
// stands still while a goroutine runs, the sleeper finds it out and
// sleeps on the runtime's timer: it wakes exactly on time, by that clock.
func TestSleeperUnderAFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSleeper(DefaultSendSpin, DefaultSendWindow)
		defer s.stop()
		for _, d := range []time.Duration{5 * time.Microsecond, 300 * time.Microsecond, 10 * time.Millisecond} {
			at := time.Now().Add(d)
			require.True(t, s.until(context.Background(), at))
			assert.Equal(t, at, time.Now())
		}
		assert.True(t, s.plain)
	})
}

// TestSaturation: the client is reported saturated when it is CPU-bound,
// or late or short of sends with workers to spare; not when the sends
// waited at the in-flight cap (the target did not keep up).
func TestSaturation(t *testing.T) {
	for _, tc := range []struct {
		name string
		tr   TargetResult
		want string
	}{
		{"on time", TargetResult{Sent: 1000, Late: 5, CPU: 0.3}, ""},
		{"cpu-bound", TargetResult{Sent: 1000, CPU: 0.9}, "CPU use was 90%"},
		{"late, workers to spare", TargetResult{Sent: 1000, Late: 100, CPU: 0.5}, "10.0% of its sends were late"},
		{"unsent, workers to spare", TargetResult{Sent: 1000, Unsent: 30, CPU: 0.5}, "30 sends due were never made"},
		{"late at the cap", TargetResult{Sent: 1000, Late: 100, Unsent: 30, CapWaits: 120, CPU: 0.5}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.tr.saturation()
			if tc.want == "" {
				assert.Empty(t, got)
			} else {
				assert.Contains(t, got, tc.want)
			}
		})
	}
}

// TestSaturatedFiguresAreMarked: a saturated client's result says so
// before its figures, and marks those it set.
func TestSaturatedFiguresAreMarked(t *testing.T) {
	r := synthetic(t, "m", 100, 0, 50, 0)
	var plain strings.Builder
	require.NoError(t, r.Render(&plain, FormatText, RenderOptions{}))
	assert.NotContains(t, plain.String(), "CLIENT SATURATED")
	r.Targets[0].Saturated = "12.0% of its sends were late with workers to spare"
	var out strings.Builder
	require.NoError(t, r.Render(&out, FormatText, RenderOptions{}))
	text := out.String()
	banner := strings.Index(text, "CLIENT SATURATED (m): 12.0% of its sends were late")
	require.GreaterOrEqual(t, banner, 0, text)
	assert.Less(t, banner, strings.Index(text, "target "), "the banner comes before the figures")
	assert.Contains(t, text, " *")
	var csv strings.Builder
	require.NoError(t, r.Render(&csv, FormatCSV, RenderOptions{}))
	assert.Contains(t, csv.String(), "load,m,,,saturated,reason,12.0% of its sends were late with workers to spare,")
}

// TestSleeperBeforeLeavesTheSpin: before returns a spin ahead of the time
// (the open loop's worker spins it, awake when the send is due), and
// until never early; a plain sleeper's before sleeps the whole wait. A
// busy machine can wake a thread later than the spin, so the early return
// is asked of one try in five.
func TestSleeperBeforeLeavesTheSpin(t *testing.T) {
	s := newSleeper(5*time.Millisecond, DefaultSendWindow)
	defer s.stop()
	early := false
	for range 5 {
		at := time.Now().Add(100 * time.Millisecond) // spin: min(5 ms, a tenth of 100 ms)
		require.True(t, s.before(context.Background(), at))
		if time.Now().Before(at) {
			early = true
			break
		}
	}
	assert.True(t, early, "before never returned ahead of the time")

	plain := newSleeper(-1, DefaultSendWindow)
	defer plain.stop()
	at := time.Now().Add(3 * time.Millisecond)
	require.True(t, plain.before(context.Background(), at))
	assert.False(t, time.Now().Before(at), "a plain sleeper's before woke early")
}

// TestFineTimerShortWaits waits on the fine timer for durations that
// often end before the wait begins: an expiry before the wait must still
// end it (the poller does not signal it again).
func TestFineTimerShortWaits(t *testing.T) {
	f, err := newFineTimer()
	if err != nil {
		t.Skipf("no fine timer on this system: %v", err)
	}
	defer f.close()
	// Goroutines that keep the other processors scheduling, and so
	// polling the poller, between the timer's arming and the wait: an
	// expiry then lands before the wait begins.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(stop); wg.Wait() }()
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					time.Sleep(time.Microsecond)
				}
			}
		})
	}
	done := make(chan error, 1)
	go func() {
		for i := range 3000 {
			d := []time.Duration{1, time.Microsecond, 20 * time.Microsecond}[i%3]
			start := time.Now()
			if err := f.wait(d); err != nil {
				done <- err
				return
			}
			if el := time.Since(start); el < d {
				done <- fmt.Errorf("wait %d of %v ended after %v", i, d, el)
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("a fine timer wait never ended")
	}
}

// TestSleeperCrowded: the sends are crowded where wakeSends mean gaps
// are less than the window, not at or above it, not with no window, and
// not before the first gap is known.
func TestSleeperCrowded(t *testing.T) {
	s := newSleeper(DefaultSendSpin, DefaultSendWindow)
	defer s.stop()
	assert.False(t, s.crowded(), "no gap known yet")
	s.meanGap = DefaultSendWindow/wakeSends - time.Microsecond
	assert.True(t, s.crowded())
	s.meanGap = DefaultSendWindow / wakeSends
	assert.False(t, s.crowded(), "wakeSends gaps make the window: not below it")
	s.meanGap = time.Millisecond
	assert.False(t, s.crowded())
	n := newSleeper(DefaultSendSpin, -1)
	defer n.stop()
	n.meanGap = time.Microsecond
	assert.False(t, n.crowded(), "no window")
}

// stuckTimer is a fine timer whose first wait wakes late by over (or
// when quit closes), and whose later ones are on time; it counts its
// waits and closes.
type stuckTimer struct {
	over   time.Duration
	quit   chan struct{}
	waits  atomic.Int32
	closes atomic.Int32
}

func (s *stuckTimer) wait(d time.Duration) error {
	if s.waits.Add(1) > 1 {
		time.Sleep(d)
		return nil
	}
	select {
	case <-time.After(d + s.over):
	case <-s.quit:
	}
	return nil
}

func (s *stuckTimer) close() { s.closes.Add(1) }

// TestBackedTimer: a wait whose fine timer wakes late ends on the
// runtime's timer; the next wait does not end at that late wake (an
// earlier wait's), nor before its own time; close ends the helper and
// closes the fine timer once.
func TestBackedTimer(t *testing.T) {
	f := &stuckTimer{over: time.Hour, quit: make(chan struct{})}
	b := newBackedTimer(f)
	rt := time.NewTimer(time.Hour)
	rt.Stop()
	start := time.Now()
	b.wait(2*time.Millisecond, rt)
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, 2*time.Millisecond)
	assert.Less(t, took, 30*time.Second, "the wait waited for the fine timer")

	// The helper is still on the first wait: the second is the runtime
	// timer's alone, and the first's late wake (now) must not end it.
	start = time.Now()
	go func() { time.Sleep(5 * time.Millisecond); close(f.quit) }()
	b.wait(50*time.Millisecond, rt)
	assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond, "an earlier wait's wake ended this one")

	// On time now: the fine timer ends the waits.
	for range 20 {
		start = time.Now()
		b.wait(time.Millisecond, rt)
		assert.GreaterOrEqual(t, time.Since(start), time.Millisecond)
	}
	assert.Greater(t, f.waits.Load(), int32(1), "the helper took no later wait")
	require.NoError(t, within(t, 10*time.Second, func() error { b.close(); return nil }))
	assert.Equal(t, int32(1), f.closes.Load())
	select {
	case <-b.exited:
	default:
		t.Fatal("close left the helper running")
	}
}

// TestSleeperCrowdedWaits: at a crowded rate the sleeper's fine waits go
// through its backed timer, none early, and stop closes it.
func TestSleeperCrowdedWaits(t *testing.T) {
	if f, err := newFineTimer(); err != nil {
		t.Skipf("no fine timer on this system: %v", err)
	} else {
		f.close()
	}
	s := newSleeper(DefaultSendSpin, DefaultSendWindow)
	gap := 50 * time.Microsecond // 20,000/s: crowded
	at := time.Now().Add(time.Millisecond)
	for i := range 400 {
		require.True(t, s.before(context.Background(), at))
		require.True(t, spinUntil(at))
		require.False(t, time.Now().Before(at), "send %d early", i)
		at = at.Add(gap)
	}
	require.True(t, s.crowded())
	require.NotNil(t, s.backed, "no crowded wait went through the backed timer")
	b := s.backed
	s.stop()
	assert.Nil(t, s.backed)
	select {
	case <-b.exited:
	default:
		t.Fatal("stop left the backed timer's helper running")
	}
}
