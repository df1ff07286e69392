package emulator

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Dist is a lognormal distribution given by its mean and standard deviation
// (not by the parameters of the underlying normal). An SD of 0 makes the
// distribution a constant; a Mean of 0 makes it always 0.
type Dist struct {
	// Mean is the distribution's mean.
	Mean float64 `json:"mean"`
	// SD is the distribution's standard deviation.
	SD float64 `json:"sd"`
}

// params returns μ and σ of the underlying normal.
func (d Dist) params() (mu, sigma float64) {
	if d.Mean <= 0 {
		return math.Inf(-1), 0
	}
	s2 := math.Log1p((d.SD * d.SD) / (d.Mean * d.Mean))
	return math.Log(d.Mean) - s2/2, math.Sqrt(s2)
}

// sample draws one value.
func (d Dist) sample(r *rand.Rand) float64 {
	if d.Mean <= 0 {
		return 0
	}
	if d.SD <= 0 {
		return d.Mean
	}
	mu, sigma := d.params()
	v := math.Exp(mu + sigma*r.NormFloat64())
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return d.Mean
	}
	return v
}

// Quantile returns the p-quantile (0 < p < 1) of the distribution.
func (d Dist) Quantile(p float64) float64 {
	if d.Mean <= 0 {
		return 0
	}
	if d.SD <= 0 {
		return d.Mean
	}
	mu, sigma := d.params()
	return math.Exp(mu + sigma*math.Sqrt2*math.Erfinv(2*p-1))
}

func (d Dist) validate(field string) error {
	if math.IsNaN(d.Mean) || math.IsNaN(d.SD) || math.IsInf(d.Mean, 0) || math.IsInf(d.SD, 0) || d.Mean < 0 || d.SD < 0 {
		return fmt.Errorf("%s: mean and sd must be finite and >= 0 (got %v ± %v)", field, d.Mean, d.SD)
	}
	if d.Mean > 1e9 || d.SD > 1e9 {
		return fmt.Errorf("%s: mean and sd must be at most 1e9", field)
	}
	return nil
}

// TokenBucket throttles an endpoint: it holds at most Burst tokens and
// gains RatePerSec tokens per emulated second (divided by the time scale in
// real time). A request that finds no token is refused with the provider's
// throttling error and a Retry-After telling when the next token comes.
type TokenBucket struct {
	// RatePerSec is the refill rate, requests per emulated second.
	RatePerSec float64 `json:"rate_per_sec"`
	// Burst is the bucket size (at least 1).
	Burst float64 `json:"burst"`
}

// Profile is the latency and fault model of one endpoint. Every duration is
// in milliseconds at time scale 1 (Options.TimeScale multiplies them all).
//
// One request is modelled as follows. A request arriving at an idle endpoint
// after its scale-to-zero window first waits ColdStartMs. It then waits for
// one of Slots concurrency slots (at most MaxQueue requests wait; more are
// refused with the provider's overload error). Its time to first token is
//
//	TTFT = sample(TTFTMs)
//	     + PrefillMsPer1K × (promptTokens − cachedTokens − RefPromptTokens) / 1000
//	     + BatchPenaltyMs × (requests being served, itself excluded)
//
// plus the queue and cold-start waits. It produces N tokens, N drawn from
// OutputTokens (rounded, at least 1, at most the request's max tokens). The
// request's decode speed v (ms per token) is drawn once from TPOTMs; its N−1
// inter-token gaps are v × w_i / mean(w) with w_i lognormal of mean 1 and
// coefficient of variation GapJitter, so each request's TPOT is exactly v and
// the TPOT distribution across requests is TPOTMs.
type Profile struct {
	// Name identifies the profile (built-in names: see BuiltinProfiles).
	Name string `json:"name"`
	// Description says what the profile reproduces.
	Description string `json:"description,omitempty"`
	// TTFTMs is time to first token at the reference prompt length with no other request active.
	TTFTMs Dist `json:"ttft_ms"`
	// TPOTMs is the per-request time per output token (decode speed).
	TPOTMs Dist `json:"tpot_ms"`
	// GapJitter is the coefficient of variation of single inter-token gaps around the request's TPOT.
	GapJitter float64 `json:"gap_jitter"`
	// OutputTokens is the output-length distribution (rounded to integers).
	OutputTokens Dist `json:"output_tokens"`
	// ReasoningTokens, when its mean is set, is the length of the reasoning
	// a reasoning model emits before its answer (OpenAI chat
	// reasoning_content and completion_tokens_details.reasoning_tokens,
	// Gemini thought parts and thoughtsTokenCount); 0: none.
	ReasoningTokens Dist `json:"reasoning_tokens,omitzero"`
	// RefPromptTokens is the prompt length at which TTFTMs holds (default 512).
	RefPromptTokens int `json:"ref_prompt_tokens"`
	// PrefillMsPer1K is the TTFT added per extra 1,000 prompt tokens (removed for shorter prompts).
	PrefillMsPer1K float64 `json:"prefill_ms_per_1k_tokens"`
	// PrefixCacheTokens, when set, gives the endpoint a prefix cache of
	// that many tokens (see the package doc's prefix cache): the prompt
	// tokens found there are left out of the prefill term.
	PrefixCacheTokens int `json:"prefix_cache_tokens,omitempty"`
	// KVCacheTokens is the KV cache's capacity in tokens (default
	// DefaultKVCacheTokens), the model behind the vllm:kv_cache_usage_perc
	// gauge: see the package doc's KV cache.
	KVCacheTokens int `json:"kv_cache_tokens,omitempty"`
	// Slots is how many requests are served at once (default 256).
	Slots int `json:"slots"`
	// MaxQueue is how many requests may wait for a slot; 0 means 4 × Slots, negative means none.
	MaxQueue int `json:"max_queue"`
	// BatchPenaltyMs is added to TTFT for every other request being served at admission.
	BatchPenaltyMs float64 `json:"batch_penalty_ms"`
	// ColdStartMs is the setup time after the endpoint scaled to zero.
	ColdStartMs Dist `json:"cold_start_ms"`
	// ErrorRates is the probability of each injected outcome per request, by
	// fault name (see Faults), e.g. {"throttle": 0.01, "close-mid-stream": 0.001}.
	ErrorRates map[string]float64 `json:"error_rates,omitempty"`
	// Throttle, when set, refuses requests beyond a token-bucket rate.
	Throttle *TokenBucket `json:"throttle,omitempty"`
	// StallMs is how long a stall-mid-stream fault holds the stream before closing it (default 30000).
	StallMs float64 `json:"stall_ms"`
	// RequestTimeoutMs, when set, is the server's own request timeout, queue
	// time included (Azure ML request_timeout_ms, PAI-EAS's 5 s, SageMaker's
	// 60 s): a request whose answer would start later gets the provider's
	// timeout answer when the time is up.
	RequestTimeoutMs float64 `json:"request_timeout_ms,omitempty"`
}

// Limits on profile values.
const (
	maxSlots        = 1 << 16
	maxQueue        = 1 << 20
	maxOutputTokens = 1 << 16
)

// withDefaults fills zero fields with their defaults.
func (p Profile) withDefaults() Profile {
	if p.RefPromptTokens == 0 {
		p.RefPromptTokens = 512
	}
	if p.Slots <= 0 {
		p.Slots = 256
	}
	if p.MaxQueue == 0 {
		p.MaxQueue = 4 * p.Slots
	}
	if p.StallMs <= 0 {
		p.StallMs = 30000
	}
	if p.KVCacheTokens <= 0 {
		p.KVCacheTokens = DefaultKVCacheTokens
	}
	return p
}

// Validate reports the first invalid field of the profile.
func (p Profile) Validate() error {
	for _, c := range []struct {
		name string
		d    Dist
	}{{"ttft_ms", p.TTFTMs}, {"tpot_ms", p.TPOTMs}, {"output_tokens", p.OutputTokens}, {"cold_start_ms", p.ColdStartMs}} {
		if err := c.d.validate(c.name); err != nil {
			return fmt.Errorf("profile %q: %w", p.Name, err)
		}
	}
	for _, v := range []struct {
		name string
		v    float64
	}{{"gap_jitter", p.GapJitter}, {"prefill_ms_per_1k_tokens", p.PrefillMsPer1K}, {"batch_penalty_ms", p.BatchPenaltyMs}, {"stall_ms", p.StallMs}, {"request_timeout_ms", p.RequestTimeoutMs}} {
		if math.IsNaN(v.v) || math.IsInf(v.v, 0) || v.v < 0 {
			return fmt.Errorf("profile %q: %s must be finite and >= 0", p.Name, v.name)
		}
	}
	if p.RefPromptTokens < 0 {
		return fmt.Errorf("profile %q: ref_prompt_tokens must be >= 0", p.Name)
	}
	if p.PrefixCacheTokens < 0 || p.PrefixCacheTokens > maxPrefixCacheTokens {
		return fmt.Errorf("profile %q: prefix_cache_tokens must be between 0 and %d", p.Name, maxPrefixCacheTokens)
	}
	if p.KVCacheTokens < 0 || p.KVCacheTokens > maxPrefixCacheTokens {
		return fmt.Errorf("profile %q: kv_cache_tokens must be between 0 and %d", p.Name, maxPrefixCacheTokens)
	}
	// Bounds keep one request's memory and time reasonable.
	const hour = 3600e3
	switch {
	case p.Slots < 0 || p.Slots > maxSlots:
		return fmt.Errorf("profile %q: slots must be between 0 and %d", p.Name, maxSlots)
	case p.MaxQueue > maxQueue:
		return fmt.Errorf("profile %q: max_queue must be at most %d", p.Name, maxQueue)
	case p.OutputTokens.Mean > maxOutputTokens:
		return fmt.Errorf("profile %q: output_tokens.mean must be at most %d", p.Name, maxOutputTokens)
	case p.TTFTMs.Mean > hour || p.TPOTMs.Mean > hour || p.ColdStartMs.Mean > hour || p.StallMs > hour:
		return fmt.Errorf("profile %q: durations must be at most one hour", p.Name)
	}
	for k, v := range p.ErrorRates {
		if !isFault(k) {
			return fmt.Errorf("profile %q: error_rates: unknown fault %q (known: %v)", p.Name, k, Faults())
		}
		if math.IsNaN(v) || v < 0 || v > 1 {
			return fmt.Errorf("profile %q: error_rates[%s] must be in [0,1]", p.Name, k)
		}
	}
	// One draw picks at most one fault, so the rates share one unit.
	total := 0.0
	for _, f := range allFaults {
		total += p.ErrorRates[string(f)]
	}
	if total > 1+1e-9 {
		return fmt.Errorf("profile %q: error_rates add up to %g; together they must be at most 1", p.Name, total)
	}
	if t := p.Throttle; t != nil {
		if !(t.RatePerSec > 0) || math.IsInf(t.RatePerSec, 0) || !(t.Burst >= 1) || math.IsInf(t.Burst, 0) {
			return fmt.Errorf("profile %q: throttle needs a finite rate_per_sec > 0 and burst >= 1", p.Name)
		}
	}
	return nil
}

// hasFigures reports whether the profile sets any latency figure: TTFT,
// TPOT or output length.
func (p Profile) hasFigures() bool {
	return p.TTFTMs != (Dist{}) || p.TPOTMs != (Dist{}) || p.OutputTokens != (Dist{})
}

// clone returns p with its own copies of ErrorRates and Throttle.
func (p Profile) clone() Profile {
	p.ErrorRates = cloneRates(p.ErrorRates)
	if p.Throttle != nil {
		t := *p.Throttle
		p.Throttle = &t
	}
	return p
}

// fallbackProfile is the profile of an endpoint that names none and has no
// built-in of its own name.
const fallbackProfile = "llama-3-8b"

// overlay returns base with every field that p sets (non-zero) in place of
// base's. Setting Slots without MaxQueue gives the default queue, 4 × Slots,
// when base's queue is its own default.
func overlay(base, p Profile) Profile {
	out := base.clone()
	set := func(dst *float64, v float64) {
		if v != 0 {
			*dst = v
		}
	}
	if p.Description != "" {
		out.Description = p.Description
	}
	set(&out.GapJitter, p.GapJitter)
	set(&out.PrefillMsPer1K, p.PrefillMsPer1K)
	set(&out.BatchPenaltyMs, p.BatchPenaltyMs)
	set(&out.StallMs, p.StallMs)
	set(&out.RequestTimeoutMs, p.RequestTimeoutMs)
	if p.RefPromptTokens != 0 {
		out.RefPromptTokens = p.RefPromptTokens
	}
	if p.PrefixCacheTokens != 0 {
		out.PrefixCacheTokens = p.PrefixCacheTokens
	}
	if p.KVCacheTokens != 0 {
		out.KVCacheTokens = p.KVCacheTokens
	}
	if p.ColdStartMs != (Dist{}) {
		out.ColdStartMs = p.ColdStartMs
	}
	if p.ErrorRates != nil {
		out.ErrorRates = cloneRates(p.ErrorRates)
	}
	if p.Throttle != nil {
		t := *p.Throttle
		out.Throttle = &t
	}
	if p.Slots != 0 {
		out.Slots = p.Slots
		if p.MaxQueue == 0 {
			out.MaxQueue = followSlots(base, out.Slots)
		}
	}
	if p.MaxQueue != 0 {
		out.MaxQueue = p.MaxQueue
	}
	return out
}

// followSlots returns the queue length of a profile derived from base with
// slots concurrency slots and no queue length of its own: 4 × slots when
// base's queue is its default (0 or 4 × its slots), else base's.
func followSlots(base Profile, slots int) int {
	if base.MaxQueue != 0 && base.MaxQueue != (Profile{Slots: base.Slots}).withDefaults().MaxQueue {
		return base.MaxQueue
	}
	return Profile{Slots: slots}.withDefaults().MaxQueue
}

// Reference figures (the package documentation's table): vLLM 0.6.3 on one NVIDIA A10, 512-token
// prompt, streaming, sequential requests.
//
// The output-length mean and sd are derived so that total = TTFT + TPOT·(N−1)
// reproduces the table's total mean and sd with TTFT, TPOT and N independent:
// E[N−1] = (total − TTFT)/TPOT and
// Var(total) = Var(TTFT) + E[X]²Var(Y) + E[Y]²Var(X) + Var(X)Var(Y), X = TPOT, Y = N−1.
// For Phi-3-mini the table's total sd (64 ms) is below what independent draws
// can give (TTFT and TPOT alone make 66.8 ms); its length is held nearly fixed
// and the emulated total sd is about 67 ms.
var referenceA10 = []Profile{
	{
		Name:           "llama-3-8b",
		Description:    "LLaMA-3-8B, vLLM 0.6.3, one A10, bf16: TTFT 428±31 ms, TPOT 28.4±2.1 ms, total 1912±147 ms",
		TTFTMs:         Dist{428, 31},
		TPOTMs:         Dist{28.4, 2.1},
		OutputTokens:   Dist{53.25, 3.26},
		BatchPenaltyMs: 27, // concurrency 1 -> 8 adds 189 ms
	},
	{
		Name:           "phi-3-mini",
		Description:    "Phi-3-mini, vLLM 0.6.3, one A10, bf16: TTFT 156±12 ms, TPOT 12.7±1.3 ms, total 798±64 ms",
		TTFTMs:         Dist{156, 12},
		TPOTMs:         Dist{12.7, 1.3},
		OutputTokens:   Dist{51.55, 0.5},
		BatchPenaltyMs: 23.0 / 7, // concurrency 1 -> 8 adds 23 ms
	},
	{
		Name:           "qwen2-7b",
		Description:    "Qwen2-7B, vLLM 0.6.3, one A10, bf16: TTFT 312±24 ms, TPOT 21.9±1.8 ms, total 1520±118 ms",
		TTFTMs:         Dist{312, 24},
		TPOTMs:         Dist{21.9, 1.8},
		OutputTokens:   Dist{56.16, 2.69},
		BatchPenaltyMs: 108.0 / 7, // interpolated between the two measured models by TTFT
	},
}

// gpuDecodeMs is the per-token decode time by GPU (reference figures).
var gpuDecodeMs = []struct {
	gpu string
	ms  float64
}{{"a10", 18.2}, {"a100", 7.9}, {"h100", 3.1}}

// BuiltinProfiles returns the built-in profiles, in a stable order:
//
//   - llama-3-8b, phi-3-mini, qwen2-7b: the A10 reference table;
//   - {model}-a10, {model}-a100, {model}-h100: the same model with TTFT and
//     TPOT scaled by the GPU's per-token decode time relative to the A10
//     (18.2 : 7.9 : 3.1 ms), so -a10 equals the reference profile;
//   - serverless and dedicated: TTFT 312±247 ms vs 87±3.1 ms (Qwen2-7B decode),
//     the serverless one scaling to zero after 5 minutes idle with a
//     2.8±0.4 s cold start (the SageMaker figure).
//
// All share: 512-token reference prompt, 23 ms per extra 1K prompt tokens,
// 256 slots, queue 1024, gap jitter 0.1, cold start 2.8±0.4 s when one happens.
// MaxQueue is set to 1024 rather than left 0, so a copy given other Slots in
// Go keeps 1024 unless MaxQueue changes too; a config file's base and the
// Options.Endpoints overlay give 4 × the new Slots instead.
func BuiltinProfiles() []Profile {
	common := func(p Profile) Profile {
		p.GapJitter = 0.1
		p.RefPromptTokens = 512
		p.PrefillMsPer1K = 23
		p.ColdStartMs = Dist{2800, 400}
		return p.withDefaults()
	}
	var out []Profile
	for _, p := range referenceA10 {
		out = append(out, common(p))
	}
	for _, p := range referenceA10 {
		for _, g := range gpuDecodeMs {
			q := p
			f := g.ms / gpuDecodeMs[0].ms
			q.Name = p.Name + "-" + g.gpu
			q.Description = fmt.Sprintf("%s with TTFT and TPOT scaled to an %s (decode %.1f ms/token vs 18.2 on an A10)", p.Name, g.gpu, g.ms)
			q.TTFTMs = Dist{p.TTFTMs.Mean * f, p.TTFTMs.SD * f}
			q.TPOTMs = Dist{p.TPOTMs.Mean * f, p.TPOTMs.SD * f}
			q.BatchPenaltyMs = p.BatchPenaltyMs * f
			out = append(out, common(q))
		}
	}
	qwen := referenceA10[2]
	sl := qwen
	sl.Name = "serverless"
	sl.Description = "serverless deployment: TTFT 312±247 ms (P95 ≈ 770 ms lognormal; measured 896), Qwen2-7B decode, scales to zero"
	sl.TTFTMs = Dist{312, 247}
	out = append(out, common(sl))
	dd := qwen
	dd.Name = "dedicated"
	dd.Description = "dedicated deployment: TTFT 87±3.1 ms (P95 ≈ 92 ms), Qwen2-7B decode"
	dd.TTFTMs = Dist{87, 3.1}
	out = append(out, common(dd))
	rs := qwen
	rs.Name = "reasoning"
	rs.Description = "reasoning model: Qwen2-7B decode, 48±16 reasoning tokens (reasoning_content, Gemini thought parts) before the answer"
	rs.ReasoningTokens = Dist{48, 16}
	out = append(out, common(rs))
	return out
}

// BuiltinProfile returns the built-in profile with the given name.
func BuiltinProfile(name string) (Profile, bool) {
	ps := BuiltinProfiles()
	i := slices.IndexFunc(ps, func(p Profile) bool { return p.Name == name })
	if i < 0 {
		return Profile{}, false
	}
	return ps[i], true
}

// DefaultEndpoints returns the endpoints served when Options.Endpoints is
// nil: one per built-in profile, named after it, under every provider, with
// no credentials configured (any or none accepted). The "serverless"
// endpoint starts scaled to zero and scales to zero after 5 minutes idle
// (emulated time); the others never do.
func DefaultEndpoints() []Endpoint {
	var out []Endpoint
	for _, p := range BuiltinProfiles() {
		e := Endpoint{Name: p.Name, Profile: p}
		if p.Name == "serverless" {
			e.IdleWindowMs = 5 * 60 * 1000
			e.StartCold = true
		}
		out = append(out, e)
	}
	return out
}
