package bench

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/cloudreq/cloudreqtest"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/latency/stats"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// loadAdapter is a fake endpoint whose latency grows with the requests in
// flight: base + perInFlight × in-flight, like a server whose batch slows
// as it fills. It counts requests by class and tag.
type loadAdapter struct {
	base, perInFlight time.Duration
	inflight          atomic.Int64
	maxInFlight       atomic.Int64 // the most calls in flight at once
	n                 atomic.Int64

	mu      sync.Mutex
	classes map[string]int
	tags    map[string]int
}

func (a *loadAdapter) Describe() cloudreq.Description {
	return cloudreq.Description{Provider: cloudreq.ProviderOpenAI, Service: cloudreq.ServiceOpenAICompatible,
		Actions: []string{cloudreq.ActionInvoke, cloudreq.ActionGenerate}}
}

func (a *loadAdapter) Encode(*cloudreq.CloudRequest, bool) (cloudreq.Payload, error) {
	return cloudreq.Payload{Body: []byte("{}")}, nil
}

func (a *loadAdapter) Invoke(ctx context.Context, c *cloudreq.Call) (*cloudreq.CloudResponse, error) {
	in := a.inflight.Add(1)
	defer a.inflight.Add(-1)
	for m := a.maxInFlight.Load(); in > m && !a.maxInFlight.CompareAndSwap(m, in); m = a.maxInFlight.Load() {
	}
	a.n.Add(1)
	a.mu.Lock()
	if a.classes == nil {
		a.classes, a.tags = map[string]int{}, map[string]int{}
	}
	a.classes[c.Request.Class]++
	for k, v := range c.Request.Tags {
		a.tags[k+"="+v]++
	}
	a.mu.Unlock()
	if err := answerAfter(ctx, a.base+time.Duration(in)*a.perInFlight); err != nil {
		return nil, err
	}
	return &cloudreq.CloudResponse{StatusCode: 200, Usage: cloudreq.Usage{OutputTokens: 8, Source: "server"}}, nil
}

// answerAfter waits d, as a server taking d to answer, or until ctx ends,
// and returns ctx's error then.
func answerAfter(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func connectTo(a cloudreq.Adapter) func(context.Context, *Target) (*cloudreq.Client, error) {
	return func(context.Context, *Target) (*cloudreq.Client, error) {
		return cloudreq.New(cloudreq.Options{
			Adapters:    []cloudreq.Adapter{a},
			CallOptions: cloudreq.CallOptions{Retry: cloudreq.RetryOptions{MaxAttempts: 1}},
		})
	}
}

func fakeTarget() Target { return Target{Name: "fake", Provider: "openai", Model: "m"} }

func TestClosedLoopStreamingCountsAndExcludesWarmup(t *testing.T) {
	chunks := []cloudreq.StreamChunk{{}, {Text: "a"}, {Text: "b"}, {Text: "c"}, {Text: "d"}}
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Chunks: chunks, ChunkDelay: time.Millisecond}}}
	tg := fakeTarget()
	tg.Stream = true
	p := &Plan{Targets: []Target{tg}, Load: Load{Concurrency: 3}, Limits: Limits{Requests: 30, Warmup: 2}}
	res, err := Run(context.Background(), p, Options{Connect: connectTo(fake)})
	require.NoError(t, err)
	require.Len(t, res.Targets, 1)
	tr := res.Targets[0]
	assert.Len(t, fake.Calls(), 32, "warm-up requests are sent")
	c := tr.Counts()
	assert.Equal(t, int64(30), c.Requests, "warm-up requests are left out")
	assert.Equal(t, int64(30), tr.Sent)
	assert.Zero(t, c.Failed)
	assert.Equal(t, int64(4*30), c.OutputTokens)
	ttft, tpot := tr.Dist(latency.TTFT, "", ""), tr.Dist(latency.TPOT, "", "")
	assert.Equal(t, uint64(30), ttft.Count())
	assert.Equal(t, uint64(30), tpot.Count())
	assert.Greater(t, tpot.Mean(), float64(500*time.Microsecond))
	assert.Len(t, tr.Points, 30)
	assert.NotEmpty(t, tr.Series.Buckets)
	assert.Equal(t, "closed loop, concurrency 3", tr.Load)
}

func TestClosedLoopErrorsByCode(t *testing.T) {
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{
		{Err: errcodes.New(errcodes.Throttled, "slow down")},
		{Response: &cloudreq.CloudResponse{StatusCode: 200}},
		{Err: errcodes.New(errcodes.ModelError, "boom")},
		{Response: &cloudreq.CloudResponse{StatusCode: 200}},
	}}
	p := &Plan{Targets: []Target{fakeTarget()}, Limits: Limits{Requests: 6}}
	res, err := Run(context.Background(), p, Options{Connect: connectTo(fake)})
	require.NoError(t, err)
	c := res.Targets[0].Counts()
	assert.Equal(t, int64(6), c.Requests)
	assert.Equal(t, int64(1), c.Errors[string(errcodes.Throttled)])
	assert.Equal(t, int64(1), c.Errors[string(errcodes.ModelError)])
	assert.Equal(t, int64(2), c.Failed)
}

func TestConnectFailureIsAResult(t *testing.T) {
	p := &Plan{Targets: []Target{fakeTarget()}, Limits: Limits{Requests: 1}}
	res, err := Run(context.Background(), p, Options{Connect: func(context.Context, *Target) (*cloudreq.Client, error) {
		return nil, errcodes.New(errcodes.Unauthenticated, "no credentials in the default chain")
	}})
	require.NoError(t, err)
	assert.Contains(t, res.Targets[0].Fatal, "ERR_UNAUTHENTICATED")
}

func TestOpenLoopAchievedRate(t *testing.T) {
	for _, model := range []string{LoadConstant, LoadPoisson} {
		t.Run(model, func(t *testing.T) {
			fake := &loadAdapter{base: 2 * time.Millisecond}
			p := &Plan{Targets: []Target{fakeTarget()}, Load: Load{Model: model, Rate: 500},
				Limits: Limits{Duration: Duration(2 * time.Second)}, Seed: 3}
			res, err := Run(context.Background(), p, Options{Connect: connectTo(fake)})
			require.NoError(t, err)
			tr := res.Targets[0]
			// The schedule's own count over the duration: exactly R×D for a
			// constant rate; Poisson(R×D) for Poisson arrivals.
			switch {
			case model == LoadConstant && (raceEnabled || tr.MachineCPU >= CPUBoundShare) && (tr.SendRate < 490 || tr.SendRate > 510):
				// Slowed by the race detector or starved by other processes.
				// The rate spans the first to the last send, and sends are
				// never early: a rate 2% off (40 ms of the 2 s span) means a
				// first or last send more than LateAfter behind, which is
				// counted; a shortfall is also reported.
				assert.Positive(t, tr.Late)
				if tr.SendRate < 490 {
					assert.NotEmpty(t, tr.Warnings)
				}
			case model == LoadConstant:
				assert.Equal(t, int64(1000), tr.Sent)
				assert.InEpsilon(t, 500, tr.SendRate, 0.02, "achieved send rate")
			default:
				assert.InEpsilon(t, 1000, float64(tr.Sent), 0.1)
			}
			lag := tr.Dist(latency.ScheduleLag, "", "")
			assert.Equal(t, uint64(tr.Sent), lag.Count(), "every send's lag is measured")
			assert.Equal(t, int64(tr.Sent), fake.n.Load(), "nothing dropped")
			assert.Equal(t, 500.0, tr.OfferedRate)
			assert.Equal(t, uint64(tr.Sent), tr.Dist(latency.E2EIntended, "", "").Count())
		})
	}
}

func TestOpenLoopNeverDropsAtTheInFlightCap(t *testing.T) {
	// Two slots and 20 ms requests cap the throughput at 100/s; the
	// schedule asks for 400/s. Every send still happens, late.
	fake := &loadAdapter{base: 20 * time.Millisecond}
	p := &Plan{Targets: []Target{fakeTarget()}, Load: Load{Model: LoadConstant, Rate: 400, MaxInFlight: 2},
		Limits: Limits{Requests: 40}}
	res, err := Run(context.Background(), p, Options{Connect: connectTo(fake)})
	require.NoError(t, err)
	tr := res.Targets[0]
	assert.Equal(t, int64(40), fake.n.Load())
	assert.Equal(t, int64(40), tr.Counts().Requests)
	assert.Greater(t, tr.Late, int64(20))
	require.NotEmpty(t, tr.Warnings)
	assert.Contains(t, strings.Join(tr.Warnings, "\n"), "behind its schedule")
	// The sends waited at the cap: the target, not the client, was slow.
	assert.Greater(t, tr.CapWaits, int64(20))
	assert.Empty(t, tr.Saturated)
	assert.LessOrEqual(t, fake.maxInFlight.Load(), int64(2), "more calls in flight than the cap")
	lag := tr.Dist(latency.ScheduleLag, "", "")
	assert.Greater(t, lag.Max(), int64(100*time.Millisecond))
	// CO-corrected E2E includes the lag; the plain E2E does not.
	assert.Greater(t, tr.Dist(latency.E2EIntended, "", "").Mean(), 3*tr.Dist(latency.E2E, "", "").Mean())
}

func TestMixWeightsOver5000Requests(t *testing.T) {
	fake := &loadAdapter{}
	m := seedMix()
	p := &Plan{Targets: []Target{fakeTarget()}, Load: Load{Concurrency: 8}, Limits: Limits{Requests: 5000}, Mix: m}
	res, err := Run(context.Background(), p, Options{Connect: connectTo(fake)})
	require.NoError(t, err)
	tr := res.Targets[0]
	require.Equal(t, int64(5000), fake.n.Load())
	for _, c := range m.Classes {
		got := float64(fake.classes[c.Label()]) / 5000
		assert.InEpsilon(t, c.Weight, got, 0.02, "%s: %.4f of requests, weight %.2f", c.Label(), got, c.Weight)
		assert.Equal(t, int64(fake.classes[c.Label()]), tr.Recorder.Counts(stats.Filter{Class: c.Label()}).Requests)
	}
	for v, w := range map[string]float64{"mobile": 0.7, "desktop": 0.2, "tablet": 0.1} {
		assert.InEpsilon(t, w, float64(fake.tags["device="+v])/5000, 0.02, v)
		assert.Equal(t, int64(fake.tags["device="+v]), tr.Tags["device"][v].Count)
	}
}

// runLadder runs the ladder lad against fake for d and returns the result
// and its one target's, which has a ladder trace.
func runLadder(t *testing.T, fake cloudreq.Adapter, lad Ladder, d time.Duration) (*Result, *TargetResult) {
	t.Helper()
	p := &Plan{Targets: []Target{fakeTarget()}, Load: Load{Model: LoadLadder, Ladder: lad}, Limits: Limits{Duration: Duration(d)}}
	res, err := Run(context.Background(), p, Options{Connect: connectTo(fake)})
	require.NoError(t, err)
	tr := res.Targets[0]
	require.NotNil(t, tr.Ladder)
	return res, tr
}

func TestLadderBacksOffAndClimbsAgain(t *testing.T) {
	// Latency = 20 ms + 1 ms per request in flight: by Little's law about
	// 20 ms / (1 − r/1000) at r req/s — 50 ms at 600/s, 133 ms at 850/s;
	// large beside a busy machine's scheduling noise.
	fake := &loadAdapter{base: 20 * time.Millisecond, perInFlight: time.Millisecond}
	lad := Ladder{Start: 100, Increment: 250, Floor: 50, Target: 2000, Step: Duration(250 * time.Millisecond),
		// A narrow hold band, so that no rate of the sequence settles in it.
		HighWater: Duration(80 * time.Millisecond), LowWater: Duration(76 * time.Millisecond)}
	_, tr := runLadder(t, fake, lad, 4*time.Second)
	steps := tr.Ladder.Steps
	require.Len(t, steps, 16)
	for _, s := range steps {
		t.Log(s)
	}
	// Every step follows the rule: the decision is the pure function of
	// the step's rate and p95.
	for i, s := range steps {
		next, act := tr.Ladder.Config.NextRate(s.Rate, s.Read.P95.D(), s.Read.Known)
		assert.Equal(t, act, s.Action, "%v", s)
		assert.InDelta(t, next, s.Next, 1e-9, "%v", s)
		if i > 0 {
			assert.Equal(t, steps[i-1].Next, s.Rate, "each step runs at the rate the last decided")
			assert.InDelta(t, s.Rate*0.25, float64(s.Sent), 2, "step %d sends rate × step", i)
		}
	}
	// And the load makes it go both ways: it backs off once latency
	// crosses the high-water mark, and climbs again once it recovers.
	backoff := slices.IndexFunc(steps, func(s LadderStep) bool { return s.Action == BackOff })
	require.Positive(t, backoff, "the ladder backs off")
	assert.True(t, slices.ContainsFunc(steps[backoff+1:], func(s LadderStep) bool { return s.Action == Climb }),
		"the ladder climbs again")
	best, ok := tr.Ladder.HighestHeld()
	assert.True(t, ok)
	assert.GreaterOrEqual(t, best, lad.Start, "it held a rate with p95 under the high-water mark")
	assert.Less(t, best, 1000.0, "and none where the model's latency is far over the high-water mark")
}

// TestLadderPartialLastStep: a run that stops inside a step (here after
// 3.5 steps) reports that step too, as a partial one with its length and
// no decision, so that every request sent is in the trace.
func TestLadderPartialLastStep(t *testing.T) {
	fake := &loadAdapter{base: 2 * time.Millisecond}
	lad := Ladder{Start: 40, Increment: 40, Floor: 40, Target: 1000, Step: Duration(200 * time.Millisecond),
		HighWater: Duration(time.Second), LowWater: Duration(500 * time.Millisecond)}
	res, tr := runLadder(t, fake, lad, 700*time.Millisecond)
	steps := tr.Ladder.Steps
	require.Len(t, steps, 4)
	sent := 0
	for i, s := range steps {
		t.Log(s)
		sent += s.Sent
		if i < 3 {
			assert.Equal(t, Climb, s.Action)
			assert.Zero(t, s.Length)
		}
	}
	last := steps[3]
	assert.Equal(t, End, last.Action)
	assert.Equal(t, 160.0, last.Rate)
	assert.InDelta(t, 100*time.Millisecond, last.Length.D(), float64(50*time.Millisecond))
	assert.Positive(t, last.Sent)
	assert.Equal(t, int(tr.Sent), sent, "every request sent is in a step")
	best, ok := tr.Ladder.HighestHeld()
	assert.True(t, ok)
	assert.Equal(t, 120.0, best, "the partial step's rate was not held for a step")
	var b strings.Builder
	require.NoError(t, res.Render(&b, FormatText, RenderOptions{}))
	assert.Contains(t, b.String(), "end")
}

func TestInterruptKeepsWhatWasMeasured(t *testing.T) {
	fake := &loadAdapter{base: 5 * time.Millisecond}
	a, b := fakeTarget(), fakeTarget()
	b.Name = "second"
	p := &Plan{Targets: []Target{a, b}, Load: Load{Model: LoadConstant, Rate: 100}, Limits: Limits{Duration: Duration(time.Minute)}}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, err := Run(ctx, p, Options{Connect: connectTo(fake)})
	require.NoError(t, err)
	assert.True(t, res.Interrupted)
	require.Len(t, res.Targets, 1, "the second target never started")
	tr := res.Targets[0]
	assert.Positive(t, tr.Sent)
	assert.LessOrEqual(t, tr.Sent, int64(31), "nothing sent after the interruption")
	require.NotEmpty(t, tr.Warnings)
	assert.Contains(t, tr.Warnings[len(tr.Warnings)-1], "interrupted")
	var out strings.Builder
	require.NoError(t, res.Render(&out, FormatText, RenderOptions{}))
	assert.Contains(t, out.String(), "INTERRUPTED (partial result; not run: second)")
}

func TestInterruptDuringWarmupIsReported(t *testing.T) {
	fake := &loadAdapter{base: 50 * time.Millisecond}
	p := &Plan{Targets: []Target{fakeTarget()}, Limits: Limits{Requests: 5, Warmup: 100}}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Millisecond)
	defer cancel()
	res, err := Run(ctx, p, Options{Connect: connectTo(fake)})
	require.NoError(t, err)
	assert.True(t, res.Interrupted)
	require.Len(t, res.Targets, 1, "the target is listed, not silently missing")
	assert.Zero(t, res.Targets[0].Sent)
	assert.Contains(t, strings.Join(res.Targets[0].Warnings, "\n"), "during the warm-up")
}

func TestCPUReadings(t *testing.T) {
	assert.Positive(t, processCPU())
	if busy, total, ok := machineCPU(); ok {
		assert.LessOrEqual(t, busy, total)
		assert.Positive(t, total)
	}
	assert.Equal(t, -1.0, cpuShare(-1, time.Second))
	assert.InDelta(t, 0.5/float64(runtime.NumCPU()), cpuShare(500*time.Millisecond, time.Second), 1e-9)
	tr := &TargetResult{CPU: 0.1, MachineCPU: 0.97, Sent: 100}
	tr.warnings(&Plan{})
	require.Len(t, tr.Warnings, 1)
	assert.Contains(t, tr.Warnings[0], "machine was busy")
	tr = &TargetResult{CPU: 0.9, MachineCPU: 0.97, Sent: 100}
	tr.warnings(&Plan{})
	require.Len(t, tr.Warnings, 1)
	assert.Contains(t, tr.Warnings[0], "CPU-bound")
}

func TestParallelTargetsOverlap(t *testing.T) {
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{{Delay: 5 * time.Millisecond}}}
	a, b := fakeTarget(), fakeTarget()
	a.Name, b.Name = "a", "b"
	p := &Plan{Targets: []Target{a, b}, Limits: Limits{Requests: 10}, Parallel: true}
	res, err := Run(context.Background(), p, Options{Connect: connectTo(fake)})
	require.NoError(t, err)
	require.Len(t, res.Targets, 2)
	assert.Equal(t, "a", res.Targets[0].Name, "results keep the plan's order")
	for _, tr := range res.Targets {
		assert.Equal(t, int64(10), tr.Counts().Requests)
	}
	ra, rb := res.Targets[0], res.Targets[1]
	endA, endB := ra.Begin.Add(ra.Wall.D()), rb.Begin.Add(rb.Wall.D())
	assert.True(t, rb.Begin.Before(endA) && ra.Begin.Before(endB), "the two targets ran at the same time")
}

// recordedProgress records what a Progress is told.
type recordedProgress struct {
	mu      sync.Mutex
	begins  []string
	totals  []int
	updates []Snapshot
	ends    int
}

func (r *recordedProgress) Begin(target string, total int, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.begins, r.totals = append(r.begins, target), append(r.totals, total)
}

func (r *recordedProgress) Update(s Snapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates = append(r.updates, s)
}

func (r *recordedProgress) End() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ends++
}

// TestParallelProgressIsOneBar: targets that run at once show as one
// progress: begun once for all their requests, updated with their sums,
// ended once.
func TestParallelProgressIsOneBar(t *testing.T) {
	fake := &loadAdapter{base: 2 * time.Millisecond}
	a, b := fakeTarget(), fakeTarget()
	b.Name = "second"
	p := &Plan{Targets: []Target{a, b}, Parallel: true, Limits: Limits{Requests: 20}}
	rec := &recordedProgress{}
	res, err := Run(context.Background(), p, Options{Connect: connectTo(fake), Progress: rec})
	require.NoError(t, err)
	require.Len(t, res.Targets, 2)
	assert.Equal(t, []string{"2 targets"}, rec.begins)
	assert.Equal(t, []int{40}, rec.totals)
	assert.Equal(t, 1, rec.ends)
	require.NotEmpty(t, rec.updates)
	last := rec.updates[len(rec.updates)-1]
	assert.Equal(t, "2 targets", last.Target)
	assert.Equal(t, int64(40), last.Done, "the final update holds both targets' requests")
}

// TestTTFTSLAOnWholeBodiesHasNoData: a non-streamed target has no first
// token, so a TTFT SLA over it has no data instead of reading its total
// latency; an E2E SLA still measures it.
func TestTTFTSLAOnWholeBodiesHasNoData(t *testing.T) {
	fake := &loadAdapter{base: 2 * time.Millisecond}
	ttft, err := stats.ParseSLA("ttft p95 1ms")
	require.NoError(t, err)
	e2e, err := stats.ParseSLA("e2e p95 1ms")
	require.NoError(t, err)
	p := &Plan{Targets: []Target{fakeTarget()}, Limits: Limits{Requests: 5}, SLAs: []stats.SLA{ttft, e2e}}
	res, err := Run(context.Background(), p, Options{Connect: connectTo(fake)})
	require.NoError(t, err)
	rep, err := res.Report()
	require.NoError(t, err)
	require.Len(t, rep.SLAs, 2)
	for _, s := range rep.SLAs {
		switch s.SLA.Metric {
		case latency.TTFT:
			assert.True(t, s.NoData, "ttft over whole bodies")
		case latency.E2E:
			assert.False(t, s.NoData)
			assert.Equal(t, uint64(5), s.Count)
		}
	}
}

func TestOpenLoopStopsAtTheDurationAndCountsUnsent(t *testing.T) {
	// One slot and 50 ms requests cap the throughput at 20/s; the
	// schedule asks for 100/s over 500 ms: 50 sends are due, offsets 0 to
	// 490 ms. The loop stops at the duration instead of sending the rest
	// late, and counts them.
	fake := &loadAdapter{base: 50 * time.Millisecond}
	p := &Plan{Targets: []Target{fakeTarget()}, Load: Load{Model: LoadConstant, Rate: 100, MaxInFlight: 1},
		Limits: Limits{Duration: Duration(500 * time.Millisecond)}}
	res, err := Run(context.Background(), p, Options{Connect: connectTo(fake)})
	require.NoError(t, err)
	tr := res.Targets[0]
	assert.Equal(t, int64(50), tr.Sent+tr.Unsent, "every due send is sent or counted unsent")
	assert.Positive(t, tr.Unsent)
	assert.Equal(t, tr.Sent, fake.n.Load())
	assert.Zero(t, tr.Counts().Failed)
	assert.Contains(t, strings.Join(tr.Warnings, "\n"), "were never made")
	last := tr.Dist(latency.ScheduleLag, "", "").Max()
	assert.Less(t, time.Duration(last), 500*time.Millisecond+p.Load.LateAfter.D()+time.Millisecond,
		"no send is made past the duration (plus LateAfter)")
}

func TestInterruptDrainsCallsInFlight(t *testing.T) {
	// 200 ms requests at 100/s: when the run is interrupted at 300 ms,
	// about 20 are in flight. They are waited for, not canceled.
	fake := &loadAdapter{base: 200 * time.Millisecond}
	p := &Plan{Targets: []Target{fakeTarget()}, Load: Load{Model: LoadConstant, Rate: 100}, Limits: Limits{Duration: Duration(time.Minute)}}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, err := Run(ctx, p, Options{Connect: connectTo(fake)})
	require.NoError(t, err)
	assert.True(t, res.Interrupted)
	tr := res.Targets[0]
	c := tr.Counts()
	assert.Positive(t, tr.Sent)
	assert.Zero(t, c.Failed, "%v", c.Errors)
	assert.Equal(t, tr.Sent, c.Requests, "every request sent was measured")
	assert.Zero(t, tr.Cut)
	assert.Zero(t, tr.Unsent, "an interruption leaves nothing unsent")
}

func TestAbortCutsTheDrain(t *testing.T) {
	for _, closedLoop := range []bool{false, true} {
		fake := &loadAdapter{base: time.Hour}
		p := &Plan{Targets: []Target{fakeTarget()}, Load: Load{Model: LoadConstant, Rate: 100}, Limits: Limits{Duration: Duration(time.Minute)}}
		if closedLoop {
			p.Load = Load{Concurrency: 4}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		abort := make(chan struct{})
		go func() { <-ctx.Done(); time.Sleep(50 * time.Millisecond); close(abort) }()
		res, err := Run(ctx, p, Options{Connect: connectTo(fake), Abort: abort})
		require.NoError(t, err)
		tr := res.Targets[0]
		assert.Positive(t, tr.Cut, "closed loop %v", closedLoop)
		assert.Equal(t, tr.Sent, tr.Cut, "every call was in flight, and cut")
		assert.Zero(t, tr.Counts().Requests, "cut calls are in no figure")
		assert.Contains(t, strings.Join(tr.Warnings, "\n"), "canceled by the run")
		if !closedLoop {
			// 100/s for 100 ms: about 10 sends, every one cut; the
			// achieved rate still counts them all.
			assert.InDelta(t, 100, tr.SendRate, 25, "the cut calls were sent")
		}
	}
}

func TestClosedLoopDrainsAtTheDuration(t *testing.T) {
	// Four workers of 80 ms requests for 200 ms: the calls in flight at
	// 200 ms finish and count; with a drain shorter than them, they are
	// cut instead, never failed.
	for _, drain := range []time.Duration{time.Second, 5 * time.Millisecond} {
		fake := &loadAdapter{base: 80 * time.Millisecond}
		p := &Plan{Targets: []Target{fakeTarget()}, Load: Load{Concurrency: 4}, Limits: Limits{Duration: Duration(200 * time.Millisecond)}}
		res, err := Run(context.Background(), p, Options{Connect: connectTo(fake), Drain: drain})
		require.NoError(t, err)
		tr := res.Targets[0]
		c := tr.Counts()
		assert.Zero(t, c.Failed, "drain %v: %v", drain, c.Errors)
		assert.Equal(t, tr.Sent, c.Requests+tr.Cut, "drain %v", drain)
		if drain == time.Second {
			assert.Zero(t, tr.Cut)
		} else {
			assert.Positive(t, tr.Cut)
		}
	}
}

func TestWarmupDoesNotSkewTheMix(t *testing.T) {
	fake := &loadAdapter{}
	m := &Mix{Classes: []Class{{Name: "a", Weight: 0.5}, {Name: "b", Weight: 0.5}}}
	p := &Plan{Targets: []Target{fakeTarget()}, Limits: Limits{Requests: 10, Warmup: 4}, Mix: m}
	res, err := Run(context.Background(), p, Options{Connect: connectTo(fake)})
	require.NoError(t, err)
	tr := res.Targets[0]
	for _, c := range []string{"a", "b"} {
		assert.Equal(t, int64(5), tr.Recorder.Counts(stats.Filter{Class: c}).Requests, "class %s: measured shares are exact", c)
	}
	assert.Equal(t, int64(14), fake.n.Load())
}

// failingAdapter throttles all but every fifth request, at once.
type failingAdapter struct{ loadAdapter }

func (a *failingAdapter) Invoke(ctx context.Context, c *cloudreq.Call) (*cloudreq.CloudResponse, error) {
	if a.n.Add(1)%5 != 0 {
		return nil, errcodes.New(errcodes.Throttled, "slow down")
	}
	return &cloudreq.CloudResponse{StatusCode: 200}, nil
}

func TestLadderCountsFailuresAsSlow(t *testing.T) {
	fake := &failingAdapter{}
	lad := Ladder{Start: 20, Increment: 20, Floor: 10, Target: 60, Step: Duration(200 * time.Millisecond)}
	p := &Plan{Targets: []Target{fakeTarget()}, Load: Load{Model: LoadLadder, Ladder: lad}, Limits: Limits{Duration: Duration(time.Second)}}
	res, err := Run(context.Background(), p, Options{Connect: connectTo(fake)})
	require.NoError(t, err)
	tr := res.Targets[0]
	require.NotNil(t, tr.Ladder)
	full := 0
	for _, s := range tr.Ladder.Steps {
		t.Log(s)
		if s.Action == End || s.Completed == 0 {
			continue
		}
		full++
		assert.True(t, s.P95Failed, "80%% failed: %v", s)
		assert.Equal(t, BackOff, s.Action, "%v", s)
	}
	assert.Positive(t, full)
	_, held := tr.Ladder.HighestHeld()
	assert.False(t, held, "no rate where most requests fail is held")
	var out strings.Builder
	require.NoError(t, res.Render(&out, FormatText, RenderOptions{}))
	assert.Contains(t, out.String(), "failed")
}

func TestLadderStepP95Rank(t *testing.T) {
	// 20 requests: the p95 is the 19th value. One failure leaves it to the
	// successes (their largest); two fill it. A call the run cut counts as
	// a failure in the step's figure.
	for _, tc := range []struct {
		errors, cut int
		failed      bool
	}{{0, 0, false}, {1, 0, false}, {2, 0, true}, {1, 1, true}, {0, 1, false}} {
		l := newLadderRun(Ladder{Step: Duration(time.Second), Metric: MetricE2E})
		t0 := time.Now()
		var calls []*ladderCall
		for range 20 {
			calls = append(calls, l.send(t0))
		}
		l.step(10, t0.Add(time.Second))
		for i, lc := range calls {
			switch {
			case i < tc.errors:
				lc.End(&latency.Sample{Err: "ERR_THROTTLED"}, false)
			case i < tc.errors+tc.cut:
				lc.End(&latency.Sample{Err: string(errcodes.Canceled)}, true)
			default:
				s := latency.Sample{E2EIntended: time.Duration(i+1) * time.Millisecond}
				s.Has = s.Has.With(latency.E2EIntended)
				lc.End(&s, false)
			}
		}
		s := l.steps[0]
		name := fmt.Sprintf("%d errors, %d cut", tc.errors, tc.cut)
		assert.Equal(t, tc.failed, s.P95Failed, name)
		assert.Equal(t, !tc.failed, s.P95Known, name)
		assert.Equal(t, 20, s.Sent, name)
		assert.Equal(t, 20-tc.cut, s.Completed, name)
		assert.Equal(t, tc.errors, s.Errors, name)
		assert.Equal(t, tc.cut, s.Cut, name)
		if !tc.failed {
			// 0 failures: the 19th of 1..20 ms; 1: the largest of 2..20.
			want := 19 * time.Millisecond
			if tc.errors+tc.cut == 1 {
				want = 20 * time.Millisecond
			}
			assert.InEpsilon(t, float64(want), float64(s.P95), 0.01, name)
		}
	}
}

// countingObserver counts the calls it sees.
type countingObserver struct{ n atomic.Int64 }

func (o *countingObserver) StartCall(ctx context.Context, _ *cloudreq.CloudRequest, _ bool) (context.Context, cloudreq.CallObserver) {
	o.n.Add(1)
	return ctx, nil
}

func TestOptionsObserversSeeTheMeasuredCallsOnly(t *testing.T) {
	fake := &loadAdapter{}
	obs := &countingObserver{}
	p := &Plan{Targets: []Target{fakeTarget()}, Limits: Limits{Requests: 5, Warmup: 3}}
	_, err := Run(context.Background(), p, Options{Connect: connectTo(fake), Observers: []cloudreq.Observer{obs}})
	require.NoError(t, err)
	assert.Equal(t, int64(8), fake.n.Load())
	assert.Equal(t, int64(5), obs.n.Load(), "the warm-up is not observed")
}

func TestUnsentWithinTheLimits(t *testing.T) {
	// The request limit bounds what was due: 10, of which few are sent.
	fake := &loadAdapter{base: 50 * time.Millisecond}
	p := &Plan{Targets: []Target{fakeTarget()}, Load: Load{Model: LoadConstant, Rate: 100, MaxInFlight: 1},
		Limits: Limits{Duration: Duration(300 * time.Millisecond), Requests: 10}}
	res, err := Run(context.Background(), p, Options{Connect: connectTo(fake)})
	require.NoError(t, err)
	tr := res.Targets[0]
	assert.Positive(t, tr.Unsent)
	assert.Equal(t, int64(10), tr.Sent+tr.Unsent)

	// A ladder counts the rest of the step it stopped in.
	lad := Ladder{Start: 100, Increment: 20, Floor: 10, Target: 200, Step: Duration(200 * time.Millisecond), HighWater: Duration(time.Second)}
	p = &Plan{Targets: []Target{fakeTarget()}, Load: Load{Model: LoadLadder, Ladder: lad, MaxInFlight: 1},
		Limits: Limits{Duration: Duration(300 * time.Millisecond)}}
	res, err = Run(context.Background(), p, Options{Connect: connectTo(&loadAdapter{base: 50 * time.Millisecond})})
	require.NoError(t, err)
	tr = res.Targets[0]
	assert.Greater(t, tr.Unsent, int64(5), "sent %d", tr.Sent)
	assert.LessOrEqual(t, tr.Sent+tr.Unsent, int64(30), "no more than the 300 ms at 100/s asked")
}

func TestAbortBeforeAnInterruptCutsNothing(t *testing.T) {
	fake := &loadAdapter{base: 80 * time.Millisecond}
	abort := make(chan struct{})
	close(abort)
	p := &Plan{Targets: []Target{fakeTarget()}, Load: Load{Concurrency: 2}, Limits: Limits{Duration: Duration(100 * time.Millisecond)}}
	res, err := Run(context.Background(), p, Options{Connect: connectTo(fake), Abort: abort})
	require.NoError(t, err)
	tr := res.Targets[0]
	assert.False(t, res.Interrupted)
	assert.Zero(t, tr.Cut, "Abort ends an interrupted run's drain only")
	assert.Equal(t, tr.Sent, tr.Counts().Requests)
}

// TestLadderNeverStepsPastTheDuration: a duration that ends inside a step
// ends the run there, even when the schedule's next send lies past the
// step's end: the run does not wait for that step's end, and no step past
// the duration is reported as held for its full length.
func TestLadderNeverStepsPastTheDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 2/s: sends due at 0, 500 and 1000 ms; 200 ms steps; a 700 ms run.
		fake := &loadAdapter{base: 2 * time.Millisecond}
		lad := Ladder{Start: 2, Floor: 2, Target: 2, Step: Duration(200 * time.Millisecond)}
		const d = 700 * time.Millisecond
		t0 := time.Now()
		_, tr := runLadder(t, fake, lad, d)
		assert.LessOrEqual(t, time.Since(t0), d, "the run ends by its duration")
		assert.Equal(t, int64(2), tr.Sent)
		for _, s := range tr.Ladder.Steps {
			if s.Action != End {
				assert.LessOrEqual(t, s.Start.D()+lad.Step.D(), d, "a full step lies within the duration: %v", s)
			}
		}
	})
}

// TestLadderPartialStepRunsToTheDuration: a step cut short by the duration
// lasted until the duration's end, not only until its last send.
func TestLadderPartialStepRunsToTheDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 10/s: a send every 100 ms; the last step, 600 to 700 ms, sends at 600.
		fake := &loadAdapter{base: 2 * time.Millisecond}
		lad := Ladder{Start: 10, Floor: 10, Target: 10, Step: Duration(200 * time.Millisecond)}
		_, tr := runLadder(t, fake, lad, 700*time.Millisecond)
		steps := tr.Ladder.Steps
		require.Len(t, steps, 4)
		last := steps[3]
		assert.Equal(t, End, last.Action)
		assert.Equal(t, 1, last.Sent)
		assert.Equal(t, 100*time.Millisecond, last.Length.D(), "%v", last)
	})
}

// TestOpenLoopTinyRate: a rate so low that the second send is centuries
// away sends once in a short run, instead of wrapping the schedule's
// offsets around to the past and sending at once.
func TestOpenLoopTinyRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &loadAdapter{base: time.Millisecond}
		p := &Plan{Targets: []Target{fakeTarget()}, Load: Load{Model: LoadConstant, Rate: 1e-12},
			Limits: Limits{Duration: Duration(time.Second), Requests: 5}}
		res, err := Run(context.Background(), p, Options{Connect: connectTo(fake)})
		require.NoError(t, err)
		assert.Equal(t, int64(1), res.Targets[0].Sent)
		assert.Equal(t, int64(1), fake.n.Load())
	})
}

// slowBegin is a Progress whose Begin takes d: it holds the dispatcher back
// as a client starved of CPU would.
type slowBegin struct{ d time.Duration }

func (s slowBegin) Begin(string, int, time.Duration) { time.Sleep(s.d) }
func (slowBegin) Update(Snapshot)                    {}
func (slowBegin) End()                               {}

// TestOpenLoopCountsTheScheduleItCouldNotKeep: a dispatcher held back past
// the duration's end (plus LateAfter) between two sends makes no more
// sends; every send it still owed is counted unsent, so that sent + unsent
// is the schedule, however far behind the client fell.
func TestOpenLoopCountsTheScheduleItCouldNotKeep(t *testing.T) {
	for _, model := range []string{LoadConstant, LoadPoisson, LoadLadder} {
		t.Run(model, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := &loadAdapter{base: time.Millisecond}
				ld := Load{Model: model, Rate: 100}
				if model == LoadLadder {
					ld = Load{Model: model, Ladder: Ladder{Start: 100, Floor: 100, Target: 100, Step: Duration(time.Second)}}
				}
				p := &Plan{Targets: []Target{fakeTarget()}, Load: ld, Limits: Limits{Duration: Duration(time.Second)}, Seed: 5}
				res, err := Run(context.Background(), p, Options{Connect: connectTo(fake), Progress: slowBegin{1100 * time.Millisecond}})
				require.NoError(t, err)
				tr := res.Targets[0]
				due := int64(100)
				if model == LoadPoisson {
					due = int64(NewPacer(Poisson, 100, 5).SkipBefore(time.Second, -1))
				}
				assert.Equal(t, due, tr.Sent+tr.Unsent, "sent %d, unsent %d", tr.Sent, tr.Unsent)
				assert.Contains(t, strings.Join(tr.Warnings, "\n"), "were never made")
			})
		})
	}
}
