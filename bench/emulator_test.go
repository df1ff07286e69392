package bench_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/latency/stats"
	"github.com/cloudinfer/cloudinfer/providers/openai"
)

// startEmulator starts an emulator on loopback for the test.
func startEmulator(tb testing.TB, scale float64, eps []emulator.Endpoint) *emulator.Server {
	tb.Helper()
	srv, err := emulator.New(emulator.Options{TimeScale: scale, Seed: 1, Endpoints: eps})
	require.NoError(tb, err)
	require.NoError(tb, srv.Start("127.0.0.1:0", ""))
	tb.Cleanup(func() { _ = srv.Close() })
	return srv
}

// emulatorConnect connects every target to the emulator's OpenAI-compatible
// protocol, with a connection pool as large as the test's concurrency.
func emulatorConnect(srv *emulator.Server) func(context.Context, *bench.Target) (*cloudreq.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 1024
	hc := &http.Client{Transport: tr}
	return func(context.Context, *bench.Target) (*cloudreq.Client, error) {
		ad, err := openai.New(openai.Options{BaseURL: srv.URL(), AllowInsecureHTTP: true, HTTPClient: hc})
		if err != nil {
			return nil, err
		}
		return cloudreq.New(cloudreq.Options{
			Adapters:    []cloudreq.Adapter{ad},
			CallOptions: cloudreq.CallOptions{Retry: cloudreq.RetryOptions{MaxAttempts: 1}, Timeout: 10 * time.Second},
		})
	}
}

func target(model string, stream bool) bench.Target {
	return bench.Target{Name: model, Provider: "openai", Model: model, Stream: stream,
		Payload: bench.Payload{PromptTokens: 64, OutputTokens: 4}}
}

// fastEndpoint answers in about ms milliseconds (at time scale 1).
func fastEndpoint(name string, ms float64) emulator.Endpoint {
	return emulator.Endpoint{Name: name, Providers: []emulator.Provider{emulator.OpenAI}, Profile: emulator.Profile{
		Name: name, TTFTMs: emulator.Dist{Mean: ms}, TPOTMs: emulator.Dist{Mean: ms / 10}, OutputTokens: emulator.Dist{Mean: 2},
		Slots: 1024,
	}}
}

func TestEmulatorOpenLoopRates(t *testing.T) {
	srv := startEmulator(t, 1, []emulator.Endpoint{fastEndpoint("fast", 5)})
	const rate, dur = 200.0, 2 * time.Second
	for _, model := range []string{bench.LoadConstant, bench.LoadPoisson} {
		t.Run(model, func(t *testing.T) {
			srv.ResetRecords()
			p := &bench.Plan{Targets: []bench.Target{target("fast", false)}, Load: bench.Load{Model: model, Rate: rate},
				Limits: bench.Limits{Duration: bench.Duration(dur)}, Seed: 11}
			res, err := bench.Run(context.Background(), p, bench.Options{Connect: emulatorConnect(srv)})
			require.NoError(t, err)
			tr := res.Targets[0]
			c := tr.Counts()
			require.Zero(t, c.Failed, "%v", tr.ErrorExamples)

			// The schedule the run had to follow, recomputed.
			arrivals := bench.Uniform
			if model == bench.LoadPoisson {
				arrivals = bench.Poisson
			}
			pc := bench.NewPacer(arrivals, rate, 11)
			var offs []time.Duration
			for off := pc.Next(); off < dur; off = pc.Next() {
				offs = append(offs, off)
			}
			scheduled := float64(len(offs)-1) / (offs[len(offs)-1] - offs[0]).Seconds()
			assert.Equal(t, int64(len(offs)), tr.Sent+tr.Unsent, "every scheduled request is sent, or counted unsent")
			assert.Equal(t, tr.Sent, c.Requests)
			recs := srv.Records()
			require.Len(t, recs, int(tr.Sent), "every request sent arrived")
			arr := make([]time.Time, len(recs))
			for i, r := range recs {
				arr[i] = r.Arrival
			}
			slices.SortFunc(arr, func(a, b time.Time) int { return a.Compare(b) })
			got := float64(len(arr)-1) / arr[len(arr)-1].Sub(arr[0]).Seconds()
			defer t.Logf("%s: scheduled %.2f/s, sent %.2f/s, arrived %.2f/s, lag p99 %.3f ms, late %d, unsent %d",
				model, scheduled, tr.SendRate, got, tr.Dist(latency.ScheduleLag, "", "").Quantile(0.99)/1e6, tr.Late, tr.Unsent)
			off := func(r float64) bool { return r < 0.98*scheduled || r > 1.02*scheduled }
			slowed := raceEnabled || tr.MachineCPU >= bench.CPUBoundShare
			if (off(tr.SendRate) || tr.Unsent > 0) && slowed {
				// Under the race detector, or on a machine whose cores other
				// processes keep busy, the client gets too little CPU to keep
				// the schedule. It must then say so, not deliver less silently:
				// sends late, or (too late by the duration's end) unsent.
				// (A rate too high comes from a late first send: sends are
				// never early, so it is counted late too.)
				t.Logf("machine CPU %.0f%%: the rate check gives way to the lateness report", 100*tr.MachineCPU)
				assert.True(t, tr.Late > 0 || tr.Unsent > 0, "late %d, unsent %d", tr.Late, tr.Unsent)
				if tr.SendRate < 0.98*scheduled || tr.Unsent > 0 {
					assert.NotEmpty(t, tr.Warnings)
				}
				return
			}
			assert.Zero(t, tr.Unsent)
			assert.InEpsilon(t, scheduled, tr.SendRate, 0.02, "achieved send rate vs the schedule's")
			if model == bench.LoadConstant {
				assert.InEpsilon(t, rate, tr.SendRate, 0.02, "achieved send rate vs the target rate")
			} else {
				assert.InEpsilon(t, rate, tr.SendRate, 0.10, "a Poisson schedule's own rate is random")
			}
			// The emulator's ground truth: arrivals at the same rate (unless
			// the emulator, on the same starved cores, fell behind itself).
			if off(got) && slowed {
				t.Logf("machine CPU %.0f%%: the emulator fell behind; its arrival rate is not checked", 100*tr.MachineCPU)
				return
			}
			assert.InEpsilon(t, scheduled, got, 0.02, "arrival rate at the emulator")
		})
	}
}

func TestEmulatorLadder(t *testing.T) {
	// TTFT grows by 4 ms per request being served (batch penalty), so the
	// total latency is about 40 ms / (1 − r/500) at r req/s: 67 ms at 200/s,
	// 133 ms at 350/s.
	ep := emulator.Endpoint{Name: "batchy", Providers: []emulator.Provider{emulator.OpenAI}, Profile: emulator.Profile{
		Name: "batchy", TTFTMs: emulator.Dist{Mean: 1000}, TPOTMs: emulator.Dist{Mean: 5}, OutputTokens: emulator.Dist{Mean: 2},
		BatchPenaltyMs: 100, Slots: 1024,
	}}
	srv := startEmulator(t, 0.04, []emulator.Endpoint{ep})
	lad := bench.Ladder{Start: 50, Increment: 150, Floor: 50, Target: 1000, Step: bench.Duration(300 * time.Millisecond),
		// A narrow hold band: a step whose p95 lands just over a wide band's
		// low-water mark on a loaded machine would hold its rate for good.
		HighWater: bench.Duration(120 * time.Millisecond), LowWater: bench.Duration(110 * time.Millisecond)}
	p := &bench.Plan{Targets: []bench.Target{target("batchy", false)}, Load: bench.Load{Model: bench.LoadLadder, Ladder: lad},
		Limits: bench.Limits{Duration: bench.Duration(4800 * time.Millisecond)}}
	res, err := bench.Run(context.Background(), p, bench.Options{Connect: emulatorConnect(srv)})
	require.NoError(t, err)
	tr := res.Targets[0]
	require.NotNil(t, tr.Ladder)
	steps := tr.Ladder.Steps
	for _, s := range steps {
		t.Log(s)
	}
	require.Len(t, steps, 16)
	backoff := slices.IndexFunc(steps, func(s bench.LadderStep) bool { return s.Action == bench.BackOff })
	require.Positive(t, backoff, "the ladder backs off when the emulator's latency crosses the high-water mark")
	assert.Greater(t, steps[backoff].P95.D(), lad.HighWater.D())
	assert.True(t, slices.ContainsFunc(steps[backoff+1:], func(s bench.LadderStep) bool { return s.Action == bench.Climb }),
		"and climbs again when it recovers")
	best, ok := tr.Ladder.HighestHeld()
	require.True(t, ok)
	assert.GreaterOrEqual(t, best, lad.Start, "it held a rate with p95 under the high-water mark")
	assert.Less(t, best, 500.0, "and none at which the emulator's latency diverges")
}

func TestEmulatorMixWeights(t *testing.T) {
	srv := startEmulator(t, 0.01, []emulator.Endpoint{fastEndpoint("fast", 20)})
	mix := &bench.Mix{Classes: []bench.Class{
		{Path: "/api/order/create", Weight: 0.32},
		{Path: "/api/user/profile", Weight: 0.45},
		{Path: "/api/product/search", Weight: 0.23},
	}, Dimensions: []bench.Dimension{{Name: "region", Values: []bench.Value{{Value: "cn-hangzhou", Weight: 5}, {Value: "us-east-1", Weight: 3}, {Value: "eu-west-1", Weight: 2}}}}}
	p := &bench.Plan{Targets: []bench.Target{target("fast", false)}, Load: bench.Load{Concurrency: 16},
		Limits: bench.Limits{Requests: 5000}, Mix: mix}
	res, err := bench.Run(context.Background(), p, bench.Options{Connect: emulatorConnect(srv)})
	require.NoError(t, err)
	tr := res.Targets[0]
	require.Equal(t, int64(5000), tr.Counts().Requests)
	require.Zero(t, tr.Counts().Failed)
	assert.Len(t, srv.Records(), 5000)
	for _, c := range mix.Classes {
		n := tr.Recorder.Counts(stats.Filter{Class: c.Path}).Requests
		assert.InEpsilon(t, c.Weight, float64(n)/5000, 0.02, "%s: %d of 5000", c.Path, n)
	}
	for _, v := range mix.Dimensions[0].Values {
		assert.InEpsilon(t, v.Weight/10, float64(tr.Tags["region"][v.Value].Count)/5000, 0.02, v.Value)
	}
}
