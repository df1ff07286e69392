package bench

import (
	"context"
	"math"
	"slices"
	"sort"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/latency"
)

// sendLog is a fake endpoint answering in d that records each request's
// intended send time and when it reached the endpoint.
type sendLog struct {
	loadAdapter
	d  time.Duration
	mu sync.Mutex
	at []time.Time // arrivals
	in []time.Time // intended send times
}

func (a *sendLog) Invoke(ctx context.Context, c *cloudreq.Call) (*cloudreq.CloudResponse, error) {
	a.mu.Lock()
	a.at = append(a.at, time.Now())
	a.in = append(a.in, c.Request.IntendedSend)
	a.mu.Unlock()
	if err := answerAfter(ctx, a.d); err != nil {
		return nil, err
	}
	return &cloudreq.CloudResponse{StatusCode: 200}, nil
}

// TestOpenLoopKeepsItsAbsoluteSchedule: a dispatcher held back 55 ms at the
// start sends the six requests then due at once, late, and every later one
// at its own time: the delay does not shift the schedule. Each request
// carries its intended time, start + k/R.
func TestOpenLoopKeepsItsAbsoluteSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &sendLog{d: time.Millisecond}
		p := &Plan{Targets: []Target{fakeTarget()}, Load: Load{Model: LoadConstant, Rate: 100},
			Limits: Limits{Duration: Duration(200 * time.Millisecond)}}
		t0 := time.Now()
		res, err := Run(context.Background(), p, Options{Connect: connectTo(fake), Progress: slowBegin{55 * time.Millisecond}})
		require.NoError(t, err)
		tr := res.Targets[0]
		require.Len(t, fake.in, 20)
		assert.Equal(t, int64(20), tr.Sent)
		// The late sends go out at once, in any order: sorted by intent.
		order := make([]int, len(fake.in))
		for i := range order {
			order[i] = i
		}
		sort.Slice(order, func(a, b int) bool { return fake.in[order[a]].Before(fake.in[order[b]]) })
		late := 0
		for i, j := range order {
			want := t0.Add(time.Duration(i) * 10 * time.Millisecond)
			assert.Equal(t, want, fake.in[j], "send %d's intended time", i)
			at := fake.at[j]
			if want.Before(t0.Add(55 * time.Millisecond)) {
				assert.Equal(t, t0.Add(55*time.Millisecond), at, "send %d is late", i)
				late++
			} else {
				assert.Equal(t, want, at, "send %d is on time", i)
			}
		}
		assert.Equal(t, 6, late)
		assert.Equal(t, int64(5), tr.Late, "lags over LateAfter (10 ms): 55, 45, 35, 25, 15 ms")
		e2e, co := tr.Dist(latency.E2E, "", ""), tr.Dist(latency.E2EIntended, "", "")
		assert.Equal(t, int64(time.Millisecond), e2e.Max())
		assert.Equal(t, int64(56*time.Millisecond), co.Max(), "the corrected E2E runs from the intended time")
	})
}

// TestClosedLoopStopsAtItsDuration: four workers of 30 ms requests for
// 100 ms send at 0, 30, 60 and 90 ms each, and none after the duration.
func TestClosedLoopStopsAtItsDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &sendLog{d: 30 * time.Millisecond}
		p := &Plan{Targets: []Target{fakeTarget()}, Load: Load{Concurrency: 4},
			Limits: Limits{Duration: Duration(100 * time.Millisecond), Warmup: 3}}
		t0 := time.Now()
		res, err := Run(context.Background(), p, Options{Connect: connectTo(fake)})
		require.NoError(t, err)
		tr := res.Targets[0]
		require.Len(t, fake.at, 3+16, "3 warm-up requests, then 4 workers × 4")
		start := t0.Add(90 * time.Millisecond) // after the warm-up
		for i, at := range fake.at[3:] {
			off := at.Sub(start)
			assert.Less(t, off, 100*time.Millisecond, "send %d", i)
			assert.Zero(t, off%(30*time.Millisecond), "send %d at %v: when a worker's last request ended", i, off)
		}
		assert.Equal(t, int64(16), tr.Sent)
		assert.Equal(t, int64(16), tr.Counts().Requests)
		assert.Zero(t, tr.Dist(latency.ScheduleLag, "", "").Max(), "a closed loop's intended send is its send")
	})
}

// TestClosedLoopRequestLimitIsExact: a request limit is met exactly, with
// no request past it, whatever the number of workers.
func TestClosedLoopRequestLimitIsExact(t *testing.T) {
	for _, workers := range []int{1, 7, 64} {
		fake := &loadAdapter{}
		p := &Plan{Targets: []Target{fakeTarget()}, Load: Load{Concurrency: workers}, Limits: Limits{Requests: 50}}
		res, err := Run(context.Background(), p, Options{Connect: connectTo(fake)})
		require.NoError(t, err)
		assert.Equal(t, int64(50), fake.n.Load(), "%d workers", workers)
		assert.Equal(t, int64(50), res.Targets[0].Sent, "%d workers", workers)
	}
}

// TestPacerPoissonGapsAreExponential: the Kolmogorov–Smirnov distance
// between 20 000 seeded gaps and Exp(R) stays under its 0.1% critical
// value, 1.95/√n; so does that of the gaps after a rate change (a
// rebase), at the new rate. Uniform gaps (distance 0.63), or exponential
// ones at another rate (0.18 between 250/s and 400/s), are far over it.
func TestPacerPoissonGapsAreExponential(t *testing.T) {
	const n = 20000
	crit := 1.95 / math.Sqrt(n)
	ks := func(gaps []float64, rate float64) float64 {
		s := slices.Clone(gaps)
		sort.Float64s(s)
		d := 0.0
		for i, g := range s {
			f := 1 - math.Exp(-rate*g)
			d = max(d, math.Abs(f-float64(i)/n), math.Abs(float64(i+1)/n-f))
		}
		return d
	}
	gaps := func(p *Pacer, from time.Duration) []float64 {
		out := make([]float64, n)
		prev := from
		for i := range out {
			off := p.Next()
			out[i] = (off - prev).Seconds()
			prev = off
		}
		return out
	}
	p := NewPacer(Poisson, 250, 11)
	g := gaps(p, 0)
	assert.Less(t, ks(g, 250), crit, "Exp(250)")
	assert.Greater(t, ks(g, 400), crit, "the test tells another rate apart")
	u := gaps(NewPacer(Uniform, 250, 11), -4*time.Millisecond)
	assert.Greater(t, ks(u, 250), crit, "the test tells uniform gaps apart")

	at := p.Peek() - time.Millisecond
	p.Rebase(at, 400)
	g = gaps(p, at)
	assert.Less(t, ks(g, 400), crit, "after a rebase: Exp(400) from the rebase")
	assert.Greater(t, ks(g, 250), crit)
}

// TestOpenLoopDeliversEverySend: on the real clock, with the fine timer,
// the window and the workers' wakers, Poisson sends at 1,000/s to an
// endpoint that answers at once (so a worker often comes idle in time for
// the send after its own, late or a few µs on) each reach the endpoint
// promptly: none is left waiting on a signal that never comes until the
// run's end.
func TestOpenLoopDeliversEverySend(t *testing.T) {
	fake := &sendLog{}
	p := &Plan{Targets: []Target{fakeTarget()}, Load: Load{Model: LoadPoisson, Rate: 1000},
		Limits: Limits{Requests: 1000}}
	res, err := Run(context.Background(), p, Options{Connect: connectTo(fake)})
	require.NoError(t, err)
	require.Len(t, fake.in, 1000)
	assert.Equal(t, int64(1000), res.Targets[0].Sent)
	slow := 0
	for i, at := range fake.at {
		if at.Sub(fake.in[i]) > 250*time.Millisecond {
			slow++
		}
	}
	assert.Zero(t, slow, "sends that reached the endpoint over 250 ms after their time")
}
