package servermetrics

import "strings"

// Role is what a known family measures, whatever its server calls it.
type Role string

// The roles. Durations are reduced in seconds whatever the family's unit.
const (
	// RoleTTFT is the server's time to first token (arrival → first token).
	RoleTTFT Role = "ttft"
	// RoleQueue is the time a request waited before it was scheduled.
	RoleQueue Role = "queue"
	// RolePrefill is the time spent in prefill (prompt processing).
	RolePrefill Role = "prefill"
	// RoleDecode is the time spent decoding (first → last token).
	RoleDecode Role = "decode"
	// RoleInference is prefill and decode together (TGI's inference time).
	RoleInference Role = "inference"
	// RolePrefillBatch and RoleDecodeStep are a batch's prefill and one
	// decode step (TGI's tgi_batch_inference_duration by method): per
	// batch, not per request, so no part of a request's latency.
	RolePrefillBatch Role = "prefill_batch"
	RoleDecodeStep   Role = "decode_step"
	// RoleE2E is the server's whole request time.
	RoleE2E Role = "e2e"
	// RoleITL is the server's inter-token latency.
	RoleITL Role = "itl"
	// RoleTPOT is the server's time per output token of a request.
	RoleTPOT Role = "tpot"
	// RoleRunning is the requests being executed (a gauge).
	RoleRunning Role = "running"
	// RoleWaiting is the requests waiting to be scheduled (a gauge).
	RoleWaiting Role = "waiting"
	// RoleKVCache is the KV-cache use, a share in [0, 1] (a gauge).
	RoleKVCache Role = "kv_cache"
	// RolePrefixHits and RolePrefixQueries count prefix-cache hits and
	// look-ups (tokens); RolePrefixHitRate is a server's own hit rate gauge.
	RolePrefixHits    Role = "prefix_cache_hits"
	RolePrefixQueries Role = "prefix_cache_queries"
	RolePrefixHitRate Role = "prefix_cache_hit_rate"
	// RolePromptTokens and RoleGenerationTokens count tokens processed.
	RolePromptTokens     Role = "prompt_tokens"
	RoleGenerationTokens Role = "generation_tokens"
	// RoleRequests counts finished requests (the denominator of a
	// duration counter's mean, Triton's).
	RoleRequests Role = "requests"
	// RolePreemptions counts preempted requests.
	RolePreemptions Role = "preemptions"
)

// Known is a family a server documents. Names are as exposed (the text
// format's, counters with their _total where the server writes one).
type Known struct {
	// Server is vllm, sglang, tgi, triton or emulator.
	Server string
	Name   string
	// Type is counter, gauge or histogram.
	Type string
	Role Role
	// Scale turns the family's unit into seconds (1; 1e-6 for µs, 1e-3
	// for ms); 0 for counts.
	Scale float64
	// Match is a label the family's series must have, as name=value
	// (TGI's method="prefill"), or "".
	Match string
}

// Families lists the families this package knows, by server, from each
// server's metrics documentation:
//
//   - vLLM (docs.vllm.ai, "Production Metrics"; v0 names kept where v1
//     renamed them)
//   - SGLang (docs.sglang.io, "Production Metrics")
//   - TGI (huggingface.co/docs/text-generation-inference, "Metrics"), whose
//     counters have no _total and whose prefill and decode are per batch
//     (tgi_batch_inference_duration{method}), not per request
//   - Triton with the TensorRT-LLM backend (docs.nvidia.com, Triton
//     "Metrics"; nv_trt_llm_* from the TRT-LLM backend), whose durations
//     are cumulative microsecond counters: a mean per request is the
//     counter's delta over nv_inference_request_success's
//   - the cloudinfer emulator, which writes vLLM's families for every
//     endpoint and TGI's for requests in TGI's payload form, plus
//     emulator_requests_total (which marks a server as the emulator).
var Families = []Known{
	{"vllm", "vllm:time_to_first_token_seconds", "histogram", RoleTTFT, 1, ""},
	{"vllm", "vllm:request_queue_time_seconds", "histogram", RoleQueue, 1, ""},
	{"vllm", "vllm:request_prefill_time_seconds", "histogram", RolePrefill, 1, ""},
	{"vllm", "vllm:request_decode_time_seconds", "histogram", RoleDecode, 1, ""},
	{"vllm", "vllm:request_inference_time_seconds", "histogram", RoleInference, 1, ""},
	{"vllm", "vllm:e2e_request_latency_seconds", "histogram", RoleE2E, 1, ""},
	{"vllm", "vllm:inter_token_latency_seconds", "histogram", RoleITL, 1, ""},
	{"vllm", "vllm:time_per_output_token_seconds", "histogram", RoleITL, 1, ""},
	{"vllm", "vllm:request_time_per_output_token_seconds", "histogram", RoleTPOT, 1, ""},
	{"vllm", "vllm:num_requests_running", "gauge", RoleRunning, 0, ""},
	{"vllm", "vllm:num_requests_waiting", "gauge", RoleWaiting, 0, ""},
	{"vllm", "vllm:kv_cache_usage_perc", "gauge", RoleKVCache, 0, ""},
	{"vllm", "vllm:gpu_cache_usage_perc", "gauge", RoleKVCache, 0, ""},
	{"vllm", "vllm:prefix_cache_hits_total", "counter", RolePrefixHits, 0, ""},
	{"vllm", "vllm:prefix_cache_queries_total", "counter", RolePrefixQueries, 0, ""},
	{"vllm", "vllm:gpu_prefix_cache_hit_rate", "gauge", RolePrefixHitRate, 0, ""},
	{"vllm", "vllm:prompt_tokens_total", "counter", RolePromptTokens, 0, ""},
	{"vllm", "vllm:generation_tokens_total", "counter", RoleGenerationTokens, 0, ""},
	{"vllm", "vllm:request_success_total", "counter", RoleRequests, 0, ""},
	{"vllm", "vllm:num_preemptions_total", "counter", RolePreemptions, 0, ""},

	{"sglang", "sglang:time_to_first_token_seconds", "histogram", RoleTTFT, 1, ""},
	{"sglang", "sglang:queue_time_seconds", "histogram", RoleQueue, 1, ""},
	{"sglang", "sglang:e2e_request_latency_seconds", "histogram", RoleE2E, 1, ""},
	{"sglang", "sglang:inter_token_latency_seconds", "histogram", RoleITL, 1, ""},
	{"sglang", "sglang:time_per_output_token_seconds", "histogram", RoleTPOT, 1, ""},
	{"sglang", "sglang:num_running_reqs", "gauge", RoleRunning, 0, ""},
	{"sglang", "sglang:num_queue_reqs", "gauge", RoleWaiting, 0, ""},
	{"sglang", "sglang:token_usage", "gauge", RoleKVCache, 0, ""},
	{"sglang", "sglang:cache_hit_rate", "gauge", RolePrefixHitRate, 0, ""},
	{"sglang", "sglang:prompt_tokens_total", "counter", RolePromptTokens, 0, ""},
	{"sglang", "sglang:generation_tokens_total", "counter", RoleGenerationTokens, 0, ""},
	{"sglang", "sglang:num_requests_total", "counter", RoleRequests, 0, ""},

	{"tgi", "tgi_request_queue_duration", "histogram", RoleQueue, 1, ""},
	{"tgi", "tgi_request_inference_duration", "histogram", RoleInference, 1, ""},
	{"tgi", "tgi_request_duration", "histogram", RoleE2E, 1, ""},
	{"tgi", "tgi_request_mean_time_per_token_duration", "histogram", RoleTPOT, 1, ""},
	{"tgi", "tgi_batch_inference_duration", "histogram", RolePrefillBatch, 1, "method=prefill"},
	{"tgi", "tgi_batch_inference_duration", "histogram", RoleDecodeStep, 1, "method=decode"},
	{"tgi", "tgi_queue_size", "gauge", RoleWaiting, 0, ""},
	{"tgi", "tgi_batch_current_size", "gauge", RoleRunning, 0, ""},
	{"tgi", "tgi_request_success", "counter", RoleRequests, 0, ""},
	{"tgi", "tgi_request_input_length", "histogram", RolePromptTokens, 0, ""},
	{"tgi", "tgi_request_generated_tokens", "histogram", RoleGenerationTokens, 0, ""},

	{"triton", "nv_inference_queue_duration_us", "counter", RoleQueue, 1e-6, ""},
	{"triton", "nv_inference_compute_infer_duration_us", "counter", RoleInference, 1e-6, ""},
	{"triton", "nv_inference_request_duration_us", "counter", RoleE2E, 1e-6, ""},
	{"triton", "nv_inference_first_response_histogram_ms", "histogram", RoleTTFT, 1e-3, ""},
	{"triton", "nv_inference_request_success", "counter", RoleRequests, 0, ""},
	{"triton", "nv_inference_pending_request_count", "gauge", RoleWaiting, 0, ""},
	{"triton", "nv_trt_llm_request_metrics", "gauge", RoleRunning, 0, "request_type=active"},
	{"triton", "nv_trt_llm_request_metrics", "gauge", RoleWaiting, 0, "request_type=waiting"},

	{"emulator", "emulator_requests_total", "counter", "", 0, ""},
}

// rank orders families for a role: a server's own before another's in the
// order of Families (vLLM first), unknown families last. A server that
// writes two families of one role (the emulator writes vLLM's and TGI's)
// is read through the first.
func rank(name string) int {
	for i, k := range Families {
		if k.Name == name {
			return i
		}
	}
	return len(Families)
}

// known returns the documented families of name.
func known(name string) []Known {
	var out []Known
	for _, k := range Families {
		if k.Name == name {
			out = append(out, k)
		}
	}
	return out
}

// matches reports whether labels satisfy k's label condition.
func (k Known) matches(labels map[string]string) bool {
	if k.Match == "" {
		return true
	}
	n, v, _ := strings.Cut(k.Match, "=")
	return labels[n] == v
}
