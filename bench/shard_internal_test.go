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
