package bench

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/cloudreq/cloudreqtest"
	"github.com/cloudinfer/cloudinfer/latency"
)

// scheduleAdapter is a fake endpoint whose latency is a function of the
// request's intended send time, as an offset from t0.
type scheduleAdapter struct {
	loadAdapter
	t0  time.Time
	lat func(off time.Duration) time.Duration
}

func (a *scheduleAdapter) Invoke(ctx context.Context, c *cloudreq.Call) (*cloudreq.CloudResponse, error) {
	a.n.Add(1)
	if err := answerAfter(ctx, a.lat(c.Request.IntendedSend.Sub(a.t0))); err != nil {
		return nil, err
	}
	return &cloudreq.CloudResponse{StatusCode: 200}, nil
}

// TestLadderStepReadsItsOwnRequests: a step's p95 is over the requests the
// step sent, not over those that happened to end in it. Step 0 (10/s)
// sends at 0 and 100 ms, each answered in 150 ms; step 1 (20/s) sends four,
// each answered in 1 s, after step 1's end. Only step 0's request at 100 ms
// ends inside step 1: that 150 ms is not step 1's latency, and step 1,
// whose own requests took 1 s, is not a rate held under the high-water
// mark.
func TestLadderStepReadsItsOwnRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := time.Millisecond
		fake := &scheduleAdapter{t0: time.Now(), lat: func(off time.Duration) time.Duration {
			if off < 200*ms {
				return 150 * ms
			}
			return time.Second
		}}
		lad := Ladder{Start: 10, Floor: 10, Increment: 10, Target: 20, Step: Duration(200 * ms),
			HighWater: Duration(200 * ms), LowWater: Duration(160 * ms)}
		_, tr := runLadder(t, fake, lad, 400*ms)
		steps := tr.Ladder.Steps
		for _, s := range steps {
			t.Log(s)
		}
		require.Len(t, steps, 2)
		assert.Equal(t, 2, steps[0].Sent)
		assert.Equal(t, 2, steps[0].Completed, "both of step 0's requests, one of which ended in step 1")
		assert.InEpsilon(t, float64(150*ms), float64(steps[0].P95), 0.02)
		assert.Equal(t, 4, steps[1].Sent)
		assert.Equal(t, 4, steps[1].Completed, "step 1's own requests, which ended after it")
		assert.InEpsilon(t, float64(time.Second), float64(steps[1].P95), 0.02)
		best, ok := tr.Ladder.HighestHeld()
		assert.True(t, ok)
		assert.Equal(t, 10.0, best, "20/s was not held: its requests took 1 s")
	})
}

// TestLadderInFlightCountsAtItsAge: requests still in flight when their
// step ends count in its read at their age so far, a lower bound of their
// latency. At 10/s with 100 ms steps and 150 ms answers, every step's one
// request is in flight at its step's end, 100 ms old: under the low-water
// mark, no evidence of overload, so the ladder holds (it is at its
// target), instead of backing off for want of completions.
func TestLadderInFlightCountsAtItsAge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &loadAdapter{base: 150 * time.Millisecond}
		lad := Ladder{Start: 10, Floor: 5, Target: 10, Step: Duration(100 * time.Millisecond)}
		_, tr := runLadder(t, fake, lad, 500*time.Millisecond)
		steps := tr.Ladder.Steps
		require.Len(t, steps, 5)
		for _, s := range steps {
			t.Log(s)
			assert.Equal(t, Hold, s.Action, "%v", s)
			assert.Equal(t, 1, s.Sent, "%v", s)
			assert.Equal(t, 1, s.Completed, "%v", s)
			assert.Equal(t, 1, s.Read.InFlight, "%v", s)
			assert.Equal(t, 100*time.Millisecond, s.Read.P95.D(), "%v: the read, at its age", s)
			assert.Equal(t, 150*time.Millisecond, s.P95.D(), "%v: the step's figure, once it ended", s)
		}
		best, ok := tr.Ladder.HighestHeld()
		assert.True(t, ok)
		assert.Equal(t, 10.0, best)
	})
}

// TestLadderCountsTheClientsQueue: a rate the client could not send is not
// held. One request in flight at most and 50 ms answers cap the client at
// 20/s; the ladder asks for 100/s. Each request is answered in 50 ms once
// sent, but waits ever longer for its send: the ladder reads the latency
// from the intended send time, the one a user arriving at 100/s would see.
func TestLadderCountsTheClientsQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &loadAdapter{base: 50 * time.Millisecond}
		lad := Ladder{Start: 100, Floor: 100, Target: 100, Step: Duration(100 * time.Millisecond)}
		p := &Plan{Targets: []Target{fakeTarget()}, Load: Load{Model: LoadLadder, Ladder: lad, MaxInFlight: 1},
			Limits: Limits{Duration: Duration(2 * time.Second)}}
		res, err := Run(context.Background(), p, Options{Connect: connectTo(fake)})
		require.NoError(t, err)
		tr := res.Targets[0]
		require.NotNil(t, tr.Ladder)
		require.NotEmpty(t, tr.Ladder.Steps)
		for _, s := range tr.Ladder.Steps {
			t.Log(s)
			assert.LessOrEqual(t, s.Length, lad.Step, "a partial step is no longer than a step: %v", s)
		}
		assert.Equal(t, BackOff, tr.Ladder.Steps[0].Action, "step 0's sends were up to 360 ms late")
		best, ok := tr.Ladder.HighestHeld()
		assert.False(t, ok, "held %v/s, where the client sent 20/s", best)
	})
}

// TestLadderTTFTReadOfAStreamInFlight: a stream still in flight at its
// step's end whose first content chunk has come counts in a TTFT read at
// that TTFT, not at its age. One stream per 100 ms step, its first
// content at 20 ms, its last at 200 ms: the read is 20 ms, under the
// low-water mark, and the ladder climbs.
func TestLadderTTFTReadOfAStreamInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		chunks := make([]cloudreq.StreamChunk, 10)
		for i := range chunks {
			chunks[i].Text = "x"
		}
		fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Chunks: chunks, ChunkDelay: 20 * time.Millisecond}}}
		tg := fakeTarget()
		tg.Stream = true
		lad := Ladder{Start: 10, Floor: 5, Increment: 10, Target: 20, Step: Duration(100 * time.Millisecond),
			HighWater: Duration(80 * time.Millisecond), LowWater: Duration(50 * time.Millisecond), Metric: MetricTTFT}
		p := &Plan{Targets: []Target{tg}, Load: Load{Model: LoadLadder, Ladder: lad}, Limits: Limits{Duration: Duration(100 * time.Millisecond)}}
		res, err := Run(context.Background(), p, Options{Connect: connectTo(fake)})
		require.NoError(t, err)
		steps := res.Targets[0].Ladder.Steps
		require.Len(t, steps, 1)
		s := steps[0]
		t.Log(s)
		assert.Equal(t, 1, s.Read.InFlight)
		assert.Equal(t, 20*time.Millisecond, s.Read.P95.D(), "the read: its TTFT")
		assert.Equal(t, Climb, s.Action)
		assert.Equal(t, 20*time.Millisecond, s.P95.D())
	})
}

// TestLadderStepWithNoSendsHolds: a step that sent nothing (a rate below
// one request per step) has nothing to read: it holds, has no p95, and is
// not held in HighestHeld's sense; a step that sent requests none of
// which gave the metric backs off.
func TestLadderStepWithNoSendsHolds(t *testing.T) {
	l := newLadderRun(Ladder{}.WithDefaults())
	t0 := time.Now()
	assert.Equal(t, 10.0, l.step(10, t0.Add(10*time.Second)))
	lc := l.send(t0.Add(10 * time.Second))
	lc.End(&latency.Sample{}, false) // a success without the metric
	assert.Equal(t, 14.0, l.step(20, t0.Add(20*time.Second)), "backs off")
	tr := l.finish(10, 0)
	require.Len(t, tr.Steps, 2)
	assert.Equal(t, Hold, tr.Steps[0].Action)
	assert.Zero(t, tr.Steps[0].Sent)
	assert.False(t, tr.Steps[0].P95Known)
	assert.Equal(t, BackOff, tr.Steps[1].Action)
	assert.Equal(t, 1, tr.Steps[1].Completed)
	assert.False(t, tr.Steps[1].P95Known)
	_, ok := tr.HighestHeld()
	assert.False(t, ok)
}
