package bench_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// TestPrefixGroupsHitTheCache: R requests in K groups sharing an N-token
// prefix find (R − K) × N tokens in the emulator's prefix cache, the
// designed share, with a closed loop and an open one.
func TestPrefixGroupsHitTheCache(t *testing.T) {
	const requests, groups, prefix, prompt = 24, 3, 64, 160
	for _, ld := range []bench.Load{
		{Model: bench.LoadClosed, Concurrency: 2},
		{Model: bench.LoadPoisson, Rate: 200},
	} {
		t.Run(ld.Model, func(t *testing.T) {
			// A fresh cache: the groups' prefixes are the same in every
			// run (as one application's system prompts are).
			ep := fastEndpoint("fast", 2)
			ep.Profile.PrefixCacheTokens = 1 << 20
			srv := startEmulator(t, 1, []emulator.Endpoint{ep})
			tg := target("fast", true)
			tg.Payload.PromptTokens = prompt
			ld.Prefix = &bench.Prefix{Groups: groups, Tokens: prefix}
			p := &bench.Plan{Targets: []bench.Target{tg}, Load: ld, Limits: bench.Limits{Requests: requests}}
			res, err := bench.Run(context.Background(), p, bench.Options{Connect: emulatorConnect(srv)})
			require.NoError(t, err)
			require.Zero(t, res.Targets[0].Counts().Failed)
			hits, tokens := 0, 0
			for _, r := range srv.Records() {
				hits += r.CachedTokens
				tokens += r.PromptTokens
				assert.Contains(t, []int{0, prefix}, r.CachedTokens)
			}
			want := (requests - groups) * prefix
			assert.Equal(t, want, hits, "designed share %.3f", float64(want)/float64(tokens))
			assert.Equal(t, requests*prompt, tokens)
			assert.Equal(t, float64(want), metricValue(t, srv, "vllm:prefix_cache_hits_total"))
		})
	}
}

func TestPrefixPlanErrors(t *testing.T) {
	for name, px := range map[string]*bench.Prefix{
		"no tokens": {Groups: 2},
		"too long":  {Tokens: 65},
		"groups":    {Groups: -1, Tokens: 8},
	} {
		t.Run(name, func(t *testing.T) {
			p := &bench.Plan{Targets: []bench.Target{target("m", false)}, Load: bench.Load{Prefix: px}, Limits: bench.Limits{Requests: 1}}
			err := p.Prepare()
			require.Error(t, err)
			assert.Equal(t, errcodes.InvalidParam, errcodes.From(err).Code)
		})
	}
}
