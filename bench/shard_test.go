package bench_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/emulator"
)

func shardPlan(model string, conc, requests int) *bench.Plan {
	return &bench.Plan{Targets: []bench.Target{target("fast", false)},
		Load: bench.Load{Model: model, Concurrency: conc, Rate: 300}, Limits: bench.Limits{Requests: requests}, Seed: 5}
}

// TestShardPlanSplitsExactly: the shards' concurrency, request limit and
// in-flight cap add up to the plan's exactly, the remainder going to the
// first shards; rates add up to the plan's; every shard has its own
// seed, the same again for the same index; one shard is the plan itself.
func TestShardPlanSplitsExactly(t *testing.T) {
	p := shardPlan(bench.LoadClosed, 10, 100)
	p.Load.MaxInFlight = 64
	require.NoError(t, p.Prepare())
	var conc, reqs, inflight []int
	seeds := map[uint64]bool{}
	for i := range 3 {
		sp, err := p.ShardPlan(i, 3)
		require.NoError(t, err)
		conc = append(conc, sp.Load.Concurrency)
		reqs = append(reqs, sp.Limits.Requests)
		inflight = append(inflight, sp.Load.MaxInFlight)
		seeds[sp.Seed] = true
		again, err := p.ShardPlan(i, 3)
		require.NoError(t, err)
		assert.Equal(t, sp.Seed, again.Seed)
		assert.Equal(t, p.Limits.Duration, sp.Limits.Duration)
	}
	assert.Equal(t, []int{4, 3, 3}, conc)
	assert.Equal(t, []int{34, 33, 33}, reqs)
	assert.Equal(t, []int{22, 21, 21}, inflight)
	assert.Len(t, seeds, 3)
	assert.Equal(t, 10, p.Load.Concurrency, "the plan itself is not changed")

	one, err := p.ShardPlan(0, 1)
	require.NoError(t, err)
	assert.Equal(t, p.Seed, one.Seed)
	assert.Equal(t, p.Load, one.Load)

	po := shardPlan(bench.LoadPoisson, 0, 1000)
	require.NoError(t, po.Prepare())
	sum := 0.0
	for i := range 4 {
		sp, err := po.ShardPlan(i, 4)
		require.NoError(t, err)
		sum += sp.Load.Rate
	}
	assert.InDelta(t, 300, sum, 1e-9)
}

func TestShardPlanRefusesWhatCannotSplit(t *testing.T) {
	ladder := shardPlan(bench.LoadLadder, 0, 0)
	ladder.Limits.Duration = bench.Duration(time.Second)
	for _, tc := range []struct {
		name         string
		p            *bench.Plan
		index, count int
		says         string
	}{
		{"index past the count", shardPlan(bench.LoadClosed, 4, 10), 3, 3, "want an index from 0 to 2"},
		{"negative index", shardPlan(bench.LoadClosed, 4, 10), -1, 3, "want an index"},
		{"no shards", shardPlan(bench.LoadClosed, 4, 10), 0, 0, "want 1 to"},
		{"too many shards", shardPlan(bench.LoadClosed, 4, 10), 0, bench.MaxShards + 1, "want 1 to"},
		{"concurrency below the count", shardPlan(bench.LoadClosed, 2, 10), 0, 3, "concurrency 2 cannot be split over 3"},
		{"requests below the count", shardPlan(bench.LoadPoisson, 0, 2), 0, 3, "2 requests cannot be split over 3"},
		{"ladder", ladder, 0, 2, "ladder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, tc.p.Prepare())
			_, err := tc.p.ShardPlan(tc.index, tc.count)
			assert.ErrorContains(t, err, tc.says)
			assert.ErrorContains(t, err, "ERR_INVALID_PARAM")
		})
	}
}

// roundTrip returns r as a file would give it back.
func roundTrip(t *testing.T, r *bench.Result) *bench.Result {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, r.WriteJSON(&b))
	out, err := bench.ParseResult(b.Bytes())
	require.NoError(t, err)
	return out
}

// TestRunShardsMerge: three shards of a Poisson plan run against the
// emulator merge into the plan's counts exactly and its offered rate; the
// merge refuses a missing shard, a shard given twice, a shard of another
// plan and a result that is no shard.
func TestRunShardsMerge(t *testing.T) {
	srv := startEmulator(t, 1, []emulator.Endpoint{fastEndpoint("fast", 2)})
	opts := bench.Options{Connect: emulatorConnect(srv)}
	const n, requests = 3, 91
	shards := make([]*bench.Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r, err := bench.RunShard(context.Background(), shardPlan(bench.LoadPoisson, 0, requests), i, n, opts)
			if assert.NoError(t, err) {
				shards[i] = roundTrip(t, r)
			}
		})
	}
	wg.Wait()
	require.NotContains(t, shards, (*bench.Result)(nil))
	for i, r := range shards {
		require.NotNil(t, r.Shard)
		assert.Equal(t, i, r.Shard.Index)
		assert.Equal(t, n, r.Shard.Count)
		assert.Equal(t, shards[0].Shard.Plan, r.Shard.Plan)
		assert.Equal(t, requests, r.Plan.Limits.Requests, "a shard's result holds the whole plan")
	}
	m, err := bench.Merge(shards[2], shards[0], shards[1])
	require.NoError(t, err)
	tr := m.Targets[0]
	assert.Equal(t, int64(requests), tr.Sent)
	assert.Equal(t, int64(requests), tr.Counts().Requests)
	assert.Zero(t, tr.Counts().Failed, "%v", tr.ErrorExamples)
	assert.InDelta(t, 300, tr.OfferedRate, 1e-9)
	assert.Equal(t, "poisson 300 req/s", tr.Load)
	require.Len(t, m.Shards, n)
	for i, s := range m.Shards {
		assert.Equal(t, i, s.Index)
	}
	assert.Positive(t, int64(tr.StartSpread))
	assert.Less(t, tr.StartSpread.D(), tr.Wall.D())

	again, err := bench.RunShard(context.Background(), shardPlan(bench.LoadPoisson, 0, requests), 1, n, opts)
	require.NoError(t, err)
	other, err := bench.RunShard(context.Background(), shardPlan(bench.LoadPoisson, 0, requests+3), 2, n, opts)
	require.NoError(t, err)
	whole, err := bench.Run(context.Background(), shardPlan(bench.LoadPoisson, 0, requests), opts)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		in   []*bench.Result
		says string
	}{
		{"missing", []*bench.Result{shards[0], shards[2]}, "1 of 3 shards are missing (1)"},
		{"twice", []*bench.Result{shards[0], shards[1], again, shards[2]}, "both shard 1 of 3"},
		{"another plan", []*bench.Result{shards[0], shards[1], other}, "another plan"},
		{"no shard", []*bench.Result{shards[0], shards[1], shards[2], whole}, "result 4 is no shard"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := bench.Merge(tc.in...)
			assert.ErrorContains(t, err, tc.says)
		})
	}

	// Shards of another plan, all of them, with its own hash.
	forged := roundTrip(t, shards[2])
	forged.Shard.Plan = "0123456789abcdef"
	_, err = bench.Merge(shards[0], shards[1], forged)
	assert.ErrorContains(t, err, "shards of different plans do not merge")
	edited := []*bench.Result{roundTrip(t, shards[0]), roundTrip(t, shards[1]), roundTrip(t, shards[2])}
	for _, r := range edited {
		r.Plan.Limits.Requests = 1000
	}
	_, err = bench.Merge(edited...)
	assert.ErrorContains(t, err, "the file was changed")
}
