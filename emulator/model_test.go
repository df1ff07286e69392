package emulator

import (
	"context"
	"io"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// binomialWithin asserts that k successes in n trials agree with
// probability p to within 5 standard deviations.
func binomialWithin(t *testing.T, what string, k, n int, p float64) {
	t.Helper()
	sd := math.Sqrt(float64(n) * p * (1 - p))
	assert.InDelta(t, float64(n)*p, float64(k), 5*sd+1e-9, "%s: %d of %d, want p = %g", what, k, n, p)
}

// TestFaultRatesHonoured draws requests the way newCall does and checks
// that each fault comes at its configured rate.
func TestFaultRatesHonoured(t *testing.T) {
	for _, rates := range []map[string]float64{
		{"internal": 0.2, "throttle": 0.1, "close-mid-stream": 0.05, "stream-error": 0.001},
		{"model-error": 0.5, "html-502": 0.5}, // every request faulted
	} {
		p := Profile{Name: "f", TTFTMs: Dist{1, 0}, TPOTMs: Dist{1, 0}, OutputTokens: Dist{1, 0}, ErrorRates: rates}
		require.NoError(t, p.Validate())
		e := newEndpoint(Endpoint{Name: "f", Profile: p}, 1, 7)
		const n = 100000
		count := map[Fault]int{}
		for seq := uint64(1); seq <= n; seq++ {
			count[drawFault(p.ErrorRates, drawRequest(e.prof, 0, e.rng(seq)).u)]++
		}
		total := 0.0
		for f, r := range rates {
			binomialWithin(t, f, count[Fault(f)], n, r)
			total += r
		}
		binomialWithin(t, "no fault", count[""], n, 1-total)
	}
}

// lognormalKurtosis is the kurtosis of a lognormal with mean and sd d.
func lognormalKurtosis(d Dist) float64 {
	_, s := d.params()
	s2 := s * s
	return math.Exp(4*s2) + 2*math.Exp(3*s2) + 3*math.Exp(2*s2) - 3
}

// TestDocumentedDistributions draws the cold-start and TTFT distributions
// the package documentation and MEASUREMENT.md give figures for, with
// tolerances of 5 standard errors for the sample size.
func TestDocumentedDistributions(t *testing.T) {
	const n = 40000
	sample := func(d Dist, seed uint64) []float64 {
		e := newEndpoint(Endpoint{Name: "d", Profile: Profile{Name: "d", TTFTMs: d, ColdStartMs: d}}, 1, seed)
		xs := make([]float64, n)
		for i := range xs {
			dr := drawRequest(e.prof, 0, e.rng(uint64(i+1)))
			require.Equal(t, dr.coldMs > 0, dr.prefillMs > 0)
			xs[i] = dr.coldMs
		}
		return xs
	}
	meanAndSD := func(what string, xs []float64, d Dist) {
		m, sd := meanSD(xs)
		assert.InDelta(t, d.Mean, m, 5*d.SD/math.Sqrt(n), "%s mean", what)
		seSD := d.SD * math.Sqrt((lognormalKurtosis(d)-1)/(4*n))
		assert.InDelta(t, d.SD, sd, 5*seSD, "%s sd", what)
	}
	// The share of draws at or below a quantile is binomial.
	below := func(what string, xs []float64, q, p float64) {
		k := 0
		for _, x := range xs {
			if x <= q {
				k++
			}
		}
		binomialWithin(t, what, k, n, p)
	}

	cold, _ := BuiltinProfile("llama-3-8b")
	assert.Equal(t, Dist{2800, 400}, cold.ColdStartMs, "cold start 2.8±0.4 s (SageMaker)")
	meanAndSD("cold start", sample(cold.ColdStartMs, 1), cold.ColdStartMs)

	sl, _ := BuiltinProfile("serverless")
	dd, _ := BuiltinProfile("dedicated")
	assert.InDelta(t, 770, sl.TTFTMs.Quantile(0.95), 1, "serverless P95 ≈ 770 ms (lognormal)")
	assert.InDelta(t, 92, dd.TTFTMs.Quantile(0.95), 0.5, "dedicated P95 ≈ 92 ms")
	for _, p := range []Profile{sl, dd} {
		xs := sample(p.TTFTMs, 2)
		meanAndSD(p.Name, xs, p.TTFTMs)
		for _, q := range []float64{0.5, 0.95, 0.99} {
			below(p.Name+" quantile", xs, p.TTFTMs.Quantile(q), q)
		}
	}
}

// TestRecordsFollowTheModel runs requests of several prompt lengths, some
// concurrently, and checks every record against the profile's formula with
// the request's own draws: prefill = sample + prompt term + batching term,
// the planned TPOT, the output length and the TTFT's parts.
func TestRecordsFollowTheModel(t *testing.T) {
	const scale = 0.01
	p, _ := BuiltinProfile("llama-3-8b")
	s := start(t, Options{TimeScale: scale, Seed: 11, SpinWaits: -1, Endpoints: []Endpoint{{Name: "llama-3-8b", Profile: p}}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	send := func(promptBytes, maxTokens int) {
		body := `{"model":"llama-3-8b","stream":true,"max_tokens":` + itoa(int64(maxTokens)) +
			`,"messages":[{"role":"user","content":"` + strings.Repeat("x", promptBytes) + `"}]}`
		resp, err := do(ctx, t, s.URL()+"/v1/chat/completions", body, nil)
		if !assert.NoError(t, err) {
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	for _, b := range []int{4, 2048, 8192} {
		send(b, 1000)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); send(2048+i, 3) }()
	}
	wg.Wait()
	recs := waitRecords(t, s, 11)

	ep := s.endpoints["llama-3-8b"]
	sawBatch := false
	for _, r := range recs {
		d := drawRequest(ep.prof, r.MaxTokens, ep.rng(r.Seq))
		want := d.prefillMs + p.PrefillMsPer1K*float64(r.PromptTokens-p.RefPromptTokens)/1000 + p.BatchPenaltyMs*float64(r.Active-1)
		assert.InDelta(t, want*scale, r.PrefillMs, 1e-5, "seq %d prefill (active %d, prompt %d)", r.Seq, r.Active, r.PromptTokens)
		assert.Equal(t, d.n, r.OutputTokens, "seq %d length", r.Seq)
		assert.Equal(t, r.OutputTokens, r.TokensSent)
		if d.n > 1 {
			assert.InDelta(t, d.tpotMs*scale, r.TPOTMs, 1e-5, "seq %d TPOT", r.Seq)
		}
		assert.GreaterOrEqual(t, r.TTFTMs+1e-3, r.QueueMs+r.PrefillMs, "seq %d: TTFT holds the queue wait and the prefill", r.Seq)
		assert.InDelta(t, r.TTFTMs+r.TPOTMs*float64(r.OutputTokens-1), r.E2EMs, 1e-3, "seq %d E2E", r.Seq)
		sawBatch = sawBatch || r.Active > 1
	}
	assert.True(t, sawBatch, "some requests were served together")
	assert.Equal(t, 4*512-4, (recs[1].PromptTokens-recs[0].PromptTokens)*4, "a token per 4 bytes")
}

// TestMetricsAgreeWithRecords checks the Prometheus metrics against the
// ground-truth records after a mix of answers.
func TestMetricsAgreeWithRecords(t *testing.T) {
	s := start(t, Options{TimeScale: 0.001, Seed: 3, SpinWaits: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	bodies := []string{chatStream, strings.Replace(chatStream, `"stream":true`, `"stream":false`, 1)}
	for i, f := range []string{"", "throttle", "close-mid-stream", "", "stream-error", "internal", ""} {
		hdr := map[string]string{}
		if f != "" {
			hdr[HeaderInject] = f
		}
		resp, err := do(ctx, t, s.URL()+"/v1/chat/completions", bodies[i%2], hdr)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	recs := waitRecords(t, s, 7)

	// Each llama-3-8b series: counter or gauge value, histogram count and sum.
	type series struct {
		value, sum float64
		count      uint64
	}
	type key struct{ status, fault string }
	metrics := map[string]series{}
	got := map[key]float64{}
	fams, err := s.metrics.reg.Gather()
	require.NoError(t, err)
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["model_name"] != "llama-3-8b" {
				continue
			}
			if f.GetName() == "emulator_requests_total" {
				got[key{labels["status"], labels["fault"]}] += m.GetCounter().GetValue()
				continue
			}
			metrics[f.GetName()] = series{
				value: m.GetCounter().GetValue() + m.GetGauge().GetValue(),
				sum:   m.GetHistogram().GetSampleSum(),
				count: m.GetHistogram().GetSampleCount(),
			}
		}
	}

	want := map[key]float64{}
	tokens, withTokens, e2e, ttft, gaps := 0, 0, 0.0, 0.0, 0
	for _, r := range recs {
		want[key{itoa(int64(r.Status)), string(r.Fault)}]++
		tokens += r.TokensSent
		if r.TokensSent > 0 {
			withTokens++
			e2e += r.LastTokenMs / 1000
			ttft += r.FirstTokenMs / 1000
			if r.Stream {
				gaps += r.TokensSent - 1
			}
		}
	}
	assert.Equal(t, want, got)
	assert.Equal(t, float64(tokens), metrics["vllm:generation_tokens_total"].value)
	assert.Equal(t, uint64(withTokens), metrics["vllm:time_to_first_token_seconds"].count)
	assert.InDelta(t, ttft, metrics["vllm:time_to_first_token_seconds"].sum, 1e-9)
	assert.InDelta(t, e2e, metrics["vllm:e2e_request_latency_seconds"].sum, 1e-9)
	assert.Equal(t, uint64(gaps), metrics["vllm:inter_token_latency_seconds"].count)
	assert.Contains(t, metrics, "vllm:num_requests_running")
	assert.Equal(t, 0.0, metrics["vllm:num_requests_running"].value)
}
