package emulator

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKVCacheModel: a request holds its prompt's blocks from admission and
// one more each time its generated tokens fill a block; the usage is the
// blocks over the capacity's, at most 1.
func TestKVCacheModel(t *testing.T) {
	kv := newKVCache(100 * PrefixBlockTokens)
	t0 := time.Unix(1000, 0)
	sched := make([]time.Time, 40) // a token each ms from t0+10ms
	for i := range sched {
		sched[i] = t0.Add(time.Duration(10+i) * time.Millisecond)
	}
	a := kv.add(20, sched)     // 20 prompt tokens: 2 blocks
	b := kv.add(16, sched[:5]) // 16: 1 block
	assert.InDelta(t, 3.0/100, kv.usage(t0), 1e-12, "prefill: prompt blocks only")
	// At t0+21ms, 12 tokens are due: a holds ⌈32/16⌉ = 2, b ⌈(16+5)/16⌉ = 2.
	assert.Equal(t, 2, a.blocks(t0.Add(21*time.Millisecond)))
	assert.Equal(t, 2, b.blocks(t0.Add(21*time.Millisecond)))
	assert.InDelta(t, 4.0/100, kv.usage(t0.Add(21*time.Millisecond)), 1e-12)
	// A token due exactly now counts: at t0+22ms, 13 are due, a holds ⌈33/16⌉ = 3.
	assert.Equal(t, 3, a.blocks(t0.Add(22*time.Millisecond)))
	// All 40 generated: a holds ⌈60/16⌉ = 4.
	assert.Equal(t, 4, a.blocks(t0.Add(time.Hour)))
	kv.remove(b)
	assert.InDelta(t, 4.0/100, kv.usage(t0.Add(time.Hour)), 1e-12)
	kv.remove(a)
	kv.remove(nil)
	assert.Zero(t, kv.usage(t0))

	full := newKVCache(2 * PrefixBlockTokens)
	full.add(100, nil)
	assert.Equal(t, 1.0, full.usage(t0), "a full cache reads 1")
}

// TestKVCacheGauge: with k requests held in their prefill, /metrics's
// vllm:kv_cache_usage_perc is k × ⌈prompt / 16⌉ blocks over the profile's
// capacity, and 0 when they are done.
func TestKVCacheGauge(t *testing.T) {
	const k, capacity = 3, 64 * PrefixBlockTokens
	ep := Endpoint{Name: "kv", Profile: Profile{
		TTFTMs: Dist{Mean: 800}, TPOTMs: Dist{Mean: 1}, OutputTokens: Dist{Mean: 3},
		Slots: 8, KVCacheTokens: capacity,
	}}
	s := start(t, Options{Seed: 5, SpinWaits: -1, Endpoints: []Endpoint{ep}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	prompt := strings.Repeat("x", 4*70) // 70 tokens: 5 blocks
	body := `{"model":"kv","stream":true,"max_tokens":3,"messages":[{"role":"user","content":"` + prompt + `"}]}`
	var wg sync.WaitGroup
	for range k {
		wg.Go(func() {
			resp, err := do(ctx, t, s.URL()+"/v1/chat/completions", body, nil)
			if !assert.NoError(t, err) {
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		})
	}
	gauge := func(name string) float64 {
		fams, err := s.metrics.reg.Gather()
		require.NoError(t, err)
		for _, f := range fams {
			if f.GetName() != name {
				continue
			}
			for _, m := range f.GetMetric() {
				return m.GetGauge().GetValue()
			}
		}
		t.Fatalf("no %s", name)
		return 0
	}
	for gauge("vllm:num_requests_running") < k {
		require.NoError(t, ctx.Err(), "the requests never ran")
		time.Sleep(5 * time.Millisecond)
	}
	got := gauge("vllm:kv_cache_usage_perc")
	readAt := time.Now()
	wg.Wait()
	recs := waitRecords(t, s, k)
	blocks := 0
	for _, r := range recs {
		first := r.Arrival.Add(time.Duration(r.FirstTokenMs * float64(time.Millisecond)))
		require.True(t, readAt.Before(first), "the gauge was read after a first token")
		blocks += (r.PromptTokens + PrefixBlockTokens - 1) / PrefixBlockTokens
	}
	assert.Greater(t, blocks, k)
	assert.InDelta(t, float64(blocks)/64, got, 1e-12)
	assert.Zero(t, gauge("vllm:kv_cache_usage_perc"), "no request runs")

	resp, err := http.Get(s.URL() + "/metrics")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Contains(t, string(b), `vllm:kv_cache_usage_perc{model_name="kv"} 0`)
}
