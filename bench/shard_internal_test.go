package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShardedConstantScheduleIsThePlans: the shards of a constant-rate
// plan send, together, at exactly the one-process schedule's times (to the
// nanosecond of rounding), each send once, and stop at its request limit.
func TestShardedConstantScheduleIsThePlans(t *testing.T) {
	p := &Plan{Targets: []Target{{Provider: "openai", Model: "m"}}, Load: Load{Model: LoadConstant, Rate: 700},
		Limits: Limits{Requests: 1000}}
	require.NoError(t, p.Prepare())
	offsets := func(p *Plan) []time.Duration {
		s := newSchedule(p.Load, p.Seed)
		var out []time.Duration
		for range p.Limits.Requests {
			out = append(out, s.Next())
		}
		return out
	}
	want := offsets(p)
	for _, n := range []int{2, 3, 7} {
		var got []time.Duration
		for i := range n {
			sp, err := p.ShardPlan(i, n)
			require.NoError(t, err)
			assert.InDelta(t, 700.0/float64(n), sp.Load.Rate, 1e-9)
			got = append(got, offsets(sp)...)
		}
		require.Len(t, got, len(want), "%d shards", n)
		// Sorted, the union is the plan's schedule.
		sorted := append([]time.Duration(nil), got...)
		for i := 1; i < len(sorted); i++ {
			for j := i; j > 0 && sorted[j] < sorted[j-1]; j-- {
				sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
			}
		}
		for i := range want {
			require.InDelta(t, float64(want[i]), float64(sorted[i]), 2, "%d shards: send %d", n, i)
		}
	}
}

// TestShardedTraceIsTheTrace: the shards of a trace replay send, together,
// every record of the window once, at the record's time; the request
// limit splits as the records do.
func TestShardedTraceIsTheTrace(t *testing.T) {
	p := &Plan{Targets: []Target{{Provider: "openai", Model: "m"}},
		Load: Load{Model: LoadTrace, Trace: &TraceLoad{File: "testdata/traces/azure2023.csv", Speed: 4}}}
	require.NoError(t, p.Prepare())
	n := p.Limits.Requests
	require.Equal(t, len(p.Load.Trace.trace.Records), n)
	offsets := func(p *Plan) []time.Duration {
		s := newSchedule(p.Load, p.Seed)
		var out []time.Duration
		for range p.Limits.Requests {
			out = append(out, s.Next())
		}
		return out
	}
	want := offsets(p)
	var got []time.Duration
	total := 0
	for i := range 3 {
		sp, err := p.ShardPlan(i, 3)
		require.NoError(t, err)
		require.NoError(t, sp.Prepare(), "a shard's plan prepares again, as Run does")
		assert.Equal(t, splitCount(n, i, 3), sp.Limits.Requests)
		assert.Equal(t, 0, p.Load.Trace.Shards, "the plan itself is not changed")
		total += sp.Limits.Requests
		got = append(got, offsets(sp)...)
	}
	assert.Equal(t, n, total)
	require.Len(t, got, len(want))
	assert.ElementsMatch(t, want, got)

	p.Load.Trace.Shards, p.Load.Trace.Shard = 2, 1
	_, err := p.ShardPlan(0, 3)
	assert.ErrorContains(t, err, "already replays part 1 of 2")
}

// TestShardedRampSessionsGamma: a ramp's rates, the sessions' users and
// a gamma rate split over the shards and add up to the plan's.
func TestShardedRampSessionsGamma(t *testing.T) {
	tg := []Target{{Provider: "openai", Model: "m"}}
	ramp := &Plan{Targets: tg, Load: Load{Model: LoadRamp, Ramp: &Ramp{From: 30, To: 90, Over: Duration(time.Second)}},
		Limits: Limits{Duration: Duration(time.Second)}}
	sess := &Plan{Targets: tg, Load: Load{Model: LoadSessions, Sessions: &Sessions{Users: 8}}, Limits: Limits{Requests: 40}}
	gamma := &Plan{Targets: tg, Load: Load{Model: LoadGamma, Rate: 90, Burstiness: 0.5}, Limits: Limits{Requests: 40}}
	for _, p := range []*Plan{ramp, sess, gamma} {
		require.NoError(t, p.Prepare())
	}
	var from, to, rate float64
	var users []int
	for i := range 3 {
		r, err := ramp.ShardPlan(i, 3)
		require.NoError(t, err)
		require.NoError(t, r.Prepare())
		from, to = from+r.Load.Ramp.From, to+r.Load.Ramp.To
		assert.Equal(t, ramp.Load.Ramp.Over, r.Load.Ramp.Over)
		s, err := sess.ShardPlan(i, 3)
		require.NoError(t, err)
		require.NoError(t, s.Prepare())
		users = append(users, s.Load.Sessions.Users)
		g, err := gamma.ShardPlan(i, 3)
		require.NoError(t, err)
		rate += g.Load.Rate
		assert.Equal(t, 0.5, g.Load.Burstiness)
	}
	assert.InDelta(t, 30, from, 1e-9)
	assert.InDelta(t, 90, to, 1e-9)
	assert.InDelta(t, 90, rate, 1e-9)
	assert.Equal(t, []int{3, 3, 2}, users)
	assert.Equal(t, 30.0, ramp.Load.Ramp.From, "the plan itself is not changed")
	_, err := sess.ShardPlan(0, 9)
	assert.ErrorContains(t, err, "8 users cannot be split over 9 shards")
}
