package emulator

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTakeTokenTinyScale: at a time scale so small that the refill rate in
// real time is infinite, the bucket refills at once rather than getting
// stuck on NaN.
func TestTakeTokenTinyScale(t *testing.T) {
	p := Profile{Name: "t", Throttle: &TokenBucket{RatePerSec: 1, Burst: 1}}
	e := newEndpoint(Endpoint{Name: "t", Profile: p}, 5e-324, 1)
	now := time.Now()
	_, ok := e.takeToken(now)
	assert.True(t, ok)
	wait, ok := e.takeToken(now)
	assert.False(t, ok, "no time passed: the bucket is empty")
	assert.GreaterOrEqual(t, wait, time.Duration(0))
	_, ok = e.takeToken(now.Add(time.Nanosecond))
	assert.True(t, ok, "any time refills the bucket")
}

// TestTakeTokenOutOfOrder: a caller that read the clock before another
// caller's refill does not take tokens away from the bucket.
func TestTakeTokenOutOfOrder(t *testing.T) {
	p := Profile{Name: "t", Throttle: &TokenBucket{RatePerSec: 1, Burst: 2}}
	e := newEndpoint(Endpoint{Name: "t", Profile: p}, 1, 1)
	t0 := e.refillAt
	_, ok := e.takeToken(t0.Add(10 * time.Second)) // full bucket: 2 → 1
	assert.True(t, ok)
	_, ok = e.takeToken(t0.Add(9 * time.Second)) // read the clock a second earlier: 1 → 0
	assert.True(t, ok, "the second token is there")
	wait, ok := e.takeToken(t0.Add(10 * time.Second))
	assert.False(t, ok)
	assert.Equal(t, time.Second, wait, "the next token comes a second after the last refill")
}

// TestForcedColdWaitsForStartInProgress: a request forced cold
// (X-Emulator-Cold) on an endpoint whose model is still starting is not
// served before the model is up, however short its own setup draw.
func TestForcedColdWaitsForStartInProgress(t *testing.T) {
	p := Profile{Name: "c", TTFTMs: Dist{1, 0}, TPOTMs: Dist{1, 0}, OutputTokens: Dist{1, 0}, ColdStartMs: Dist{10000, 8000}}
	// A seed whose first request draws a long setup and whose second a short one.
	seed := uint64(0)
	for s := uint64(1); s <= 1000 && seed == 0; s++ {
		e := newEndpoint(Endpoint{Name: "c", Profile: p}, 1, s)
		if drawRequest(e.prof, 0, e.rng(1)).coldMs > 5000 && drawRequest(e.prof, 0, e.rng(2)).coldMs < 2000 {
			seed = s
		}
	}
	require.NotZero(t, seed)
	s, err := New(Options{TimeScale: 1, Seed: seed, Endpoints: []Endpoint{{Name: "c", Profile: p, StartCold: true}}})
	require.NoError(t, err)
	defer s.Close()
	ep := s.endpoints["c"]
	gen := genRequest{dialect: dialectChat, promptTokens: 1}
	// Canceled contexts: admit records the waits and returns at once.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	first, err := s.newCall(ep, OpenAI, "chat/completions", gen, func(string) string { return "" }, time.Now())
	require.NoError(t, err)
	require.ErrorIs(t, first.admit(ctx), context.Canceled)
	assert.True(t, first.rec.Cold, "the first request starts the model")
	defer first.end(0, "canceled")

	forced, err := s.newCall(ep, OpenAI, "chat/completions", gen, func(h string) string {
		if h == HeaderCold {
			return "1"
		}
		return ""
	}, time.Now())
	require.NoError(t, err)
	require.ErrorIs(t, forced.admit(ctx), context.Canceled)
	done := time.Now()
	defer forced.end(0, "canceled")
	assert.True(t, forced.rec.Cold)
	ep.mu.Lock()
	remaining := ms(ep.readyAt.Sub(done))
	ep.mu.Unlock()
	assert.GreaterOrEqual(t, forced.rec.ColdStartMs, remaining, "the forced request waits at least until the model is up")
}
