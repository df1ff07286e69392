package groundtruth

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/latency"
)

// scale runs the cold-start cases 20× faster than real time: a 2.8 s cold
// start takes 140 ms, the dedicated profile's 87 ms TTFT 4.35 ms.
const scale = 0.05

func scaled(d time.Duration) time.Duration { return time.Duration(float64(d) * scale) }

// Evidence 1: the server says so (X-Emulator-Cold-Start, with its setup
// time): cold, the SLA clock at model-ready, the setup as overhead.
func TestColdServerReported(t *testing.T) {
	e := newEnv(t, scale, []emulator.Endpoint{endpoint(t, "dedicated", "sl", func(ep *emulator.Endpoint) { ep.StartCold = true })}, nil)
	r := e.stream(t, request("sl", 3))
	rec := e.record(t, r.resp)
	require.True(t, rec.Cold, "the emulator cold-started")
	s := r.sample
	assert.Equal(t, latency.Cold, s.Start)
	assert.Equal(t, latency.ReasonServerReported, s.Reason)
	assert.Equal(t, latency.ClockModelReady, s.Clock)
	setup := time.Duration(rec.ColdStartMs * float64(time.Millisecond))
	assert.InDelta(t, float64(setup), float64(s.ColdStart), float64(time.Microsecond), "overhead is the server's setup time")
	assert.Equal(t, r.resp.Timing.Send().Add(s.ColdStart), r.resp.Timing.ModelReady)
	// The SLA clock leaves the setup out: TTFT = TTFT from send − setup.
	assert.Equal(t, s.TTFTFromSend-s.ColdStart, s.TTFT)
	assert.GreaterOrEqual(t, s.TTFTFromSend, r.truthTTFT-time.Microsecond)

	again := e.stream(t, request("sl", 3)).sample
	assert.Equal(t, latency.Warm, again.Start)
	assert.Equal(t, latency.ReasonServerReported, again.Reason)
	assert.Equal(t, latency.ClockSend, again.Clock)
}

// Evidence 2: the provider refused with its not-ready signal, a retry
// succeeded: cold, model ready at the successful attempt's send.
func TestColdNotReadyThenReady(t *testing.T) {
	rw := &rewrite{req: func(n int, r *http.Request) {
		if n == 1 {
			r.Header.Set(emulator.HeaderInject, "model-not-ready")
		}
	}}
	e := newEnv(t, scale, []emulator.Endpoint{endpoint(t, "dedicated", "d", nil)}, rw)
	r := e.stream(t, request("d", 3))
	s := r.sample
	assert.Equal(t, latency.Cold, s.Start)
	assert.Equal(t, latency.ReasonNotReadyThenReady, s.Reason)
	assert.Equal(t, 2, s.Attempts)
	tl := r.resp.Timing
	require.Len(t, tl.Attempts, 2)
	assert.Equal(t, "ERR_MODEL_NOT_READY", tl.Attempts[0].Code)
	assert.Equal(t, tl.Attempts[1].Send, tl.ModelReady)
	assert.Equal(t, tl.Attempts[1].Send.Sub(tl.Attempts[0].Send), s.ColdStart)
	// The emulator asks for a retry after 1 s (scaled): the client waited it.
	assert.GreaterOrEqual(t, s.ColdStart, scaled(time.Second))
	assert.Equal(t, latency.ClockModelReady, s.Clock)
	assert.Equal(t, s.TTFTFromSend, s.TTFT, "clock at the final send")
	assert.Equal(t, s.TTFTIntended-s.ColdStart, s.TTFT+tl.Attempts[0].Send.Sub(tl.IntendedSend))
}

// Evidence 3: with a provider that reports nothing, the first request and
// the first after an idle gap longer than the scale-to-zero window are
// cold; the emulator's record confirms it scaled from zero each time.
func TestColdFirstRequestAndIdleGap(t *testing.T) {
	const idleMs = 4000 // emulated: 200 ms at this scale
	window := scaled(idleMs * time.Millisecond)
	e := newEnv(t, scale, []emulator.Endpoint{endpoint(t, "dedicated", "s2z", func(ep *emulator.Endpoint) {
		ep.StartCold, ep.IdleWindowMs = true, idleMs
	})}, &rewrite{resp: silent}, func(o *cloudreq.Options) { o.ScaleToZeroWindow = window })

	first := e.stream(t, request("s2z", 3))
	assert.True(t, e.record(t, first.resp).Cold)
	assert.Equal(t, latency.Cold, first.sample.Start)
	assert.Equal(t, latency.ReasonFirstRequest, first.sample.Reason)
	assert.Equal(t, latency.ClockSend, first.sample.Clock, "no ready time is known")
	assert.Nil(t, first.resp.ServerStart, "the provider reported nothing")

	warm := e.stream(t, request("s2z", 3))
	assert.False(t, e.record(t, warm.resp).Cold)
	assert.Equal(t, latency.Warm, warm.sample.Start)
	assert.Equal(t, latency.ReasonNoEvidence, warm.sample.Reason)

	time.Sleep(window + window/2)
	idle := e.stream(t, request("s2z", 3))
	assert.True(t, e.record(t, idle.resp).Cold)
	assert.Equal(t, latency.Cold, idle.sample.Start)
	assert.Equal(t, latency.ReasonIdleGap, idle.sample.Reason)
	// The cold calls carry the setup in their TTFT: well above the warm one.
	assert.Greater(t, idle.sample.TTFT, warm.sample.TTFT+scaled(time.Second))
}

// Evidence 4: with a provider that reports nothing and no window, a call
// whose first byte comes beyond 3 × the endpoint's warm p50 is only
// suspected cold.
func TestSuspectedColdBySlowFirstByte(t *testing.T) {
	// At a quarter of real time: warm first byte ≈ 22 ms, a cold start
	// ≈ 700 ms, far beyond 3 × the warm p50 whatever the machine's load.
	e := newEnv(t, 0.25, []emulator.Endpoint{endpoint(t, "dedicated", "d", nil)}, &rewrite{resp: silent})
	for range latency.DefaultSuspectMinWarm {
		r := e.stream(t, request("d", 2))
		require.NotEqual(t, latency.Cold, r.sample.Start)
	}
	req := request("d", 2)
	req.Header = http.Header{emulator.HeaderCold: {"1"}} // the emulator cold-starts this one
	r := e.stream(t, req)
	assert.True(t, e.record(t, r.resp).Cold)
	assert.Equal(t, latency.SuspectedCold, r.sample.Start)
	assert.Equal(t, latency.ReasonSlowFirstByte, r.sample.Reason)
	assert.Equal(t, latency.ClockSend, r.sample.Clock)
	_, has := r.sample.Value(latency.ColdStart)
	assert.False(t, has, "no overhead is claimed on suspicion")
}
