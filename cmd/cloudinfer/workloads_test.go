package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/bench"
)

// TestWorkloadFlagsBuildTheLoad: each workload's flags fill its plan
// fields, and name its model when --load is not given.
func TestWorkloadFlagsBuildTheLoad(t *testing.T) {
	c := parse(t, "bench", "--endpoint", "m", "--trace", "../../bench/testdata/traces/mooncake.jsonl", "--trace-speed", "10",
		"--trace-start", "1s", "--trace-length", "500ms")
	p, _, err := c.Bench.plan()
	require.NoError(t, err)
	require.NoError(t, p.Prepare())
	assert.Equal(t, bench.LoadTrace, p.Load.Model)
	assert.Equal(t, 10.0, p.Load.Trace.Speed)
	assert.Positive(t, p.Limits.Requests, "the window's records, not the default 100")
	assert.Less(t, p.Limits.Requests, 30)

	c = parse(t, "bench", "--endpoint", "m", "--ramp-from", "5", "--ramp-to", "50", "--ramp-over", "10s", "--ramp-shape", "exponential")
	p, _, err = c.Bench.plan()
	require.NoError(t, err)
	require.NoError(t, p.Prepare())
	assert.Equal(t, bench.LoadRamp, p.Load.Model)
	assert.Equal(t, bench.Ramp{From: 5, To: 50, Over: bench.Duration(10e9), Shape: "exponential", Arrivals: "constant"}, *p.Load.Ramp)

	c = parse(t, "bench", "--endpoint", "m", "--users", "4", "--turns", "5", "--think", "1s", "--think-dist", "exponential",
		"--prefix-tokens", "64", "--prefix-groups", "2", "--ignore-eos", "--output-tokens", "9")
	p, _, err = c.Bench.plan()
	require.NoError(t, err)
	require.NoError(t, p.Prepare())
	assert.Equal(t, bench.LoadSessions, p.Load.Model)
	assert.Equal(t, 4, p.Load.Sessions.Users)
	assert.Equal(t, 5, p.Load.Sessions.Turns)
	assert.Equal(t, &bench.Prefix{Groups: 2, Tokens: 64}, p.Load.Prefix)
	assert.True(t, p.Targets[0].Payload.IgnoreEOS)

	c = parse(t, "bench", "--endpoint", "m", "--load", "gamma", "--rate", "20", "--burstiness", "0.25")
	p, _, err = c.Bench.plan()
	require.NoError(t, err)
	require.NoError(t, p.Prepare())
	assert.Equal(t, 0.25, p.Load.Burstiness)

	c = parse(t, "bench", "--endpoint", "m", "--burstiness=-1")
	_, _, err = c.Bench.plan()
	require.Error(t, err, "a negative number is refused")
}

// TestEveryWorkloadForEveryProvider: every new load model runs against
// every provider of the embedded emulator.
func TestEveryWorkloadForEveryProvider(t *testing.T) {
	loads := map[string][]string{
		"gamma":    {"--load", "gamma", "--rate", "200", "--burstiness", "0.5", "--requests", "4"},
		"ramp":     {"--ramp-from", "100", "--ramp-to", "400", "--ramp-over", "50ms", "--requests", "4"},
		"trace":    {"--trace", "../../bench/testdata/traces/burstgpt.csv", "--trace-speed", "40", "--requests", "4"},
		"sessions": {"--users", "2", "--turns", "2", "--stateful", "--requests", "4"},
		"prefix":   {"--prefix-tokens", "32", "--prefix-groups", "2", "--prompt-tokens", "64", "--requests", "4"},
	}
	for _, prov := range []string{"openai", "aws", "azure", "gcp", "alibaba"} {
		for name, args := range loads {
			t.Run(prov+"/"+name, func(t *testing.T) {
				out := filepath.Join(t.TempDir(), "r.json")
				argv := append([]string{"bench", "--provider", prov, "--endpoint", "phi-3-mini", "--time-scale", "0.01",
					"--warmup", "0", "--quiet", "--out", out}, args...)
				var stdout bytes.Buffer
				require.NoError(t, parse(t, argv...).Bench.run(context.Background(), &stdout, nil))
				res, err := bench.ReadResult(out)
				require.NoError(t, err)
				tr := res.Targets[0]
				assert.Equal(t, int64(4), tr.Counts().Requests)
				assert.Zero(t, tr.Counts().Failed, "%v", tr.ErrorExamples)
				if name == "sessions" {
					require.Len(t, tr.Turns, 2)
					assert.Contains(t, stdout.String(), "Turns")
					if prov == "aws" {
						assert.Positive(t, tr.SessionsOpened)
						assert.Equal(t, tr.SessionsOpened, tr.SessionsClosed)
					}
				}
			})
		}
	}
}
