package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/latency"
)

// TestScheduleOfEachLoad: the constant and Poisson loads are their Pacer,
// decided to the end (no horizon, no feedback, no trace); the ladder is
// a uniform pacer at its start rate decided up to its first step's end.
func TestScheduleOfEachLoad(t *testing.T) {
	for _, tc := range []struct {
		model    string
		arrivals Arrivals
	}{{LoadConstant, Uniform}, {LoadPoisson, Poisson}} {
		s := newSchedule(Load{Model: tc.model, Rate: 37}, 5)
		want := NewPacer(tc.arrivals, 37, 5)
		for i := range 50 {
			require.Equal(t, want.Next(), s.Next(), "%s: send %d", tc.model, i)
		}
		assert.Equal(t, 37.0, s.Rate(), tc.model)
		assert.Equal(t, Never, s.Horizon(), tc.model)
		assert.Nil(t, s.Sent(time.Now()), tc.model)
		assert.Nil(t, s.Finish(time.Second), tc.model)
	}
	lad := Ladder{Start: 20, Step: Duration(100 * time.Millisecond)}.WithDefaults()
	s := newSchedule(Load{Model: LoadLadder, Ladder: lad}, 5)
	assert.Equal(t, 20.0, s.Rate())
	assert.Equal(t, 100*time.Millisecond, s.Horizon())
	assert.Equal(t, time.Duration(0), s.Next())
	assert.Equal(t, 50*time.Millisecond, s.Next())
}

// TestLadderPacerDecidesAtItsHorizon: at a step's end the ladder decides
// from the step's own requests and schedules the next step from there:
// a step at 10/s whose one request took 50 ms (under the low-water mark)
// climbs to 20/s, whose sends start at the step's end, every 50 ms; the
// horizon moves a step on. A run that stops 30 ms into the next step,
// having sent in it, ends with a partial step of 30 ms.
func TestLadderPacerDecidesAtItsHorizon(t *testing.T) {
	ms := time.Millisecond
	lad := Ladder{Start: 10, Floor: 10, Increment: 10, Target: 20, Step: Duration(100 * ms),
		HighWater: Duration(200 * ms), LowWater: Duration(100 * ms)}.WithDefaults()
	s := newSchedule(Load{Model: LoadLadder, Ladder: lad}, 1)
	t0 := time.Now()
	require.Equal(t, time.Duration(0), s.Next())
	fb := s.Sent(t0)
	require.NotNil(t, fb)
	sample := latency.Sample{E2EIntended: 50 * ms}
	sample.Has = sample.Has.With(latency.E2EIntended)
	fb.End(&sample, false)
	require.Equal(t, 100*ms, s.Peek(), "the next send, at 10/s, lies at the horizon")

	assert.Equal(t, 20.0, s.Decide(t0.Add(100*ms)))
	assert.Equal(t, 200*ms, s.Horizon())
	assert.Equal(t, 20.0, s.Rate())
	assert.Equal(t, 100*ms, s.Next(), "the climbed step's first send, at its start")
	s.Sent(t0.Add(100*ms)).End(&sample, false)
	assert.Equal(t, 150*ms, s.Peek())

	tr := s.Finish(130 * ms)
	require.NotNil(t, tr)
	require.Len(t, tr.Steps, 2)
	assert.Equal(t, Climb, tr.Steps[0].Action)
	assert.Equal(t, 1, tr.Steps[0].Sent)
	assert.Equal(t, End, tr.Steps[1].Action)
	assert.Equal(t, 20.0, tr.Steps[1].Rate)
	assert.Equal(t, Duration(30*ms), tr.Steps[1].Length)
}
