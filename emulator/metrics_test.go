package emulator

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMetricsEqualInjected: the vLLM families' sums and counts are the
// records' queue, prefill, decode and TTFT, and the TGI families are fed
// by the requests in TGI's form only, with the same truth.
func TestMetricsEqualInjected(t *testing.T) {
	s := start(t, Options{TimeScale: 0.01, Seed: 5, SpinWaits: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tgiStream := strings.Replace(tgiSample, `{"inputs"`, `{"stream":true,"inputs"`, 1)
	for i := range 6 {
		path, body := "/v1/chat/completions", chatStream
		if i%2 == 1 {
			path, body = "/endpoints/llama-3-8b/invocations-response-stream", tgiStream
		}
		resp, err := do(ctx, t, s.URL()+path, body, nil)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode, path)
	}
	recs := waitRecords(t, s, 6)

	type hist struct {
		sum   float64
		count uint64
	}
	got := map[string]hist{}
	counters := map[string]float64{}
	fams, err := s.metrics.reg.Gather()
	require.NoError(t, err)
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			name := f.GetName()
			for _, l := range m.GetLabel() {
				if l.GetName() == "method" {
					name += "/" + l.GetValue()
				}
			}
			if h := m.GetHistogram(); h != nil {
				g := got[name]
				g.sum += h.GetSampleSum()
				g.count += h.GetSampleCount()
				got[name] = g
			}
			if c := m.GetCounter(); c != nil {
				counters[name] += c.GetValue()
			}
		}
	}
	var queue, prefill, decode, ttft, tgiQueue, tgiInf, tgiPrefill float64
	tgiN := 0
	for _, r := range recs {
		require.Equal(t, "ok", r.Outcome)
		queue += r.QueueMs / 1000
		prefill += r.PrefillMs / 1000
		decode += (r.LastTokenMs - r.FirstTokenMs) / 1000
		ttft += r.FirstTokenMs / 1000
		if r.Route != "chat/completions" {
			tgiN++
			tgiQueue += r.QueueMs / 1000
			tgiInf += (r.LastTokenMs - r.ColdStartMs - r.QueueMs) / 1000
			tgiPrefill += r.PrefillMs / 1000
		}
	}
	require.Equal(t, 3, tgiN)
	for name, want := range map[string]hist{
		"vllm:request_queue_time_seconds":      {queue, 6},
		"vllm:request_prefill_time_seconds":    {prefill, 6},
		"vllm:request_decode_time_seconds":     {decode, 6},
		"vllm:time_to_first_token_seconds":     {ttft, 6},
		"tgi_request_queue_duration":           {tgiQueue, 3},
		"tgi_request_inference_duration":       {tgiInf, 3},
		"tgi_batch_inference_duration/prefill": {tgiPrefill, 3},
	} {
		assert.Equal(t, want.count, got[name].count, name)
		assert.InDelta(t, want.sum, got[name].sum, 1e-9, name)
	}
	assert.Positive(t, prefill)
	assert.Positive(t, decode)
	assert.Equal(t, 3.0, counters["tgi_request_count"])
	assert.Equal(t, 3.0, counters["tgi_request_success"])
}
