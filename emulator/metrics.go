package emulator

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are vLLM's Prometheus metrics (label model_name = endpoint name)
// for every request (vllm:kv_cache_usage_perc from the endpoint's KV-cache
// model, kvCache), TGI's for the requests in TGI's payload form (with a
// model_name label too: one emulator serves many models, a TGI one), fed
// from the ground-truth records, plus emulator_requests_total.
//
// Each family is what the records say: vLLM's queue is QueueMs, prefill
// PrefillMs, decode LastTokenMs − FirstTokenMs, TTFT FirstTokenMs and E2E
// LastTokenMs (from arrival, a cold start included); TGI's queue is
// QueueMs, inference LastTokenMs − ColdStartMs − QueueMs, duration
// LastTokenMs, and its per-batch prefill and decode are each request's
// prefill and each inter-token gap (the emulator's batches are of one).
type metrics struct {
	reg     *prometheus.Registry
	handler http.Handler

	ttft, itl, tpot, e2e, queue, prefill, decode *prometheus.HistogramVec
	promptTokens, genTokens                      *prometheus.CounterVec
	cacheQueries, cacheHits                      *prometheus.CounterVec
	requests                                     *prometheus.CounterVec

	tgiQueue, tgiInference, tgiDuration, tgiTPOT, tgiBatch *prometheus.HistogramVec
	tgiInput, tgiGenerated                                 *prometheus.HistogramVec
	tgiCount, tgiSuccess                                   *prometheus.CounterVec

	spans *spanWriter // nil: no OTLP spans
}

// vLLM's bucket boundaries (seconds).
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets  = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	e2eBuckets  = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	// tokenBuckets are TGI's token-count buckets (powers of two).
	tokenBuckets = prometheus.ExponentialBuckets(1, 2, 14)
)

func newMetrics(s *Server) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	if s.opts.OTLPWriter != nil {
		m.spans = &spanWriter{w: s.opts.OTLPWriter}
	}
	hist := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, []string{"model_name"})
		m.reg.MustRegister(h)
		return h
	}
	m.ttft = hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttftBuckets)
	m.itl = hist("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", itlBuckets)
	m.tpot = hist("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", itlBuckets)
	m.e2e = hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", e2eBuckets)
	m.queue = hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", e2eBuckets)
	m.prefill = hist("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", e2eBuckets)
	m.decode = hist("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", e2eBuckets)
	m.promptTokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:prompt_tokens_total", Help: "Number of prefill tokens processed."}, []string{"model_name"})
	m.genTokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:generation_tokens_total", Help: "Number of generation tokens processed."}, []string{"model_name"})
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "emulator_requests_total", Help: "Requests answered by the emulator."}, []string{"model_name", "provider", "status", "fault"})
	m.cacheQueries = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:prefix_cache_queries_total", Help: "Prefix cache queries, in terms of number of queried tokens."}, []string{"model_name"})
	m.cacheHits = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:prefix_cache_hits_total", Help: "Prefix cache hits, in terms of number of cached tokens."}, []string{"model_name"})
	m.reg.MustRegister(m.promptTokens, m.genTokens, m.cacheQueries, m.cacheHits, m.requests)
	m.tgiQueue = hist("tgi_request_queue_duration", "Time spent in the queue per request.", e2eBuckets)
	m.tgiInference = hist("tgi_request_inference_duration", "Request inference duration.", e2eBuckets)
	m.tgiDuration = hist("tgi_request_duration", "Total time spent processing the request (e2e latency).", e2eBuckets)
	m.tgiTPOT = hist("tgi_request_mean_time_per_token_duration", "Mean time per token per request.", itlBuckets)
	m.tgiBatch = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "tgi_batch_inference_duration", Help: "Batch inference duration.", Buckets: ttftBuckets}, []string{"model_name", "method"})
	m.tgiInput = hist("tgi_request_input_length", "Input tokens per request.", tokenBuckets)
	m.tgiGenerated = hist("tgi_request_generated_tokens", "Generated tokens per request.", tokenBuckets)
	m.tgiCount = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tgi_request_count", Help: "Total number of requests."}, []string{"model_name"})
	m.tgiSuccess = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tgi_request_success", Help: "Number of successful requests."}, []string{"model_name"})
	m.reg.MustRegister(m.tgiBatch, m.tgiCount, m.tgiSuccess)
	for _, name := range s.order {
		ep := s.endpoints[name]
		labels := prometheus.Labels{"model_name": name}
		m.reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "vllm:num_requests_running", Help: "Number of requests in model execution batches.", ConstLabels: labels},
				func() float64 { a, _ := ep.load(); return float64(a) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "vllm:num_requests_waiting", Help: "Number of requests waiting to be processed.", ConstLabels: labels},
				func() float64 { _, w := ep.load(); return float64(w) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "vllm:kv_cache_usage_perc", Help: "KV-cache usage. 1 means 100 percent usage.", ConstLabels: labels},
				func() float64 { return ep.kv.usage(time.Now()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tgi_batch_current_size", Help: "Current batch size.", ConstLabels: labels},
				func() float64 { a, _ := ep.load(); return float64(a) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tgi_queue_size", Help: "Current queue size.", ConstLabels: labels},
				func() float64 { _, w := ep.load(); return float64(w) }),
		)
	}
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	return m
}

func (m *metrics) serve(w http.ResponseWriter, r *http.Request) { m.handler.ServeHTTP(w, r) }

// observe feeds one finished request's ground truth into the metrics;
// tgi: the request came in TGI's payload form.
func (s *Server) observe(r *Record, tgi bool) {
	m := s.metrics
	name := r.Endpoint
	m.requests.WithLabelValues(name, string(r.Provider), strconv.Itoa(r.Status), string(r.Fault)).Inc()
	if m.spans != nil {
		m.spans.write(s, r)
	}
	if tgi {
		s.observeTGI(r)
	}
	if r.cacheQueried {
		m.cacheQueries.WithLabelValues(name).Add(float64(r.PromptTokens))
		m.cacheHits.WithLabelValues(name).Add(float64(r.CachedTokens))
	}
	if r.TokensSent == 0 {
		return
	}
	m.promptTokens.WithLabelValues(name).Add(float64(r.PromptTokens))
	m.genTokens.WithLabelValues(name).Add(float64(r.TokensSent))
	m.ttft.WithLabelValues(name).Observe(r.FirstTokenMs / 1000)
	m.e2e.WithLabelValues(name).Observe(r.LastTokenMs / 1000)
	m.queue.WithLabelValues(name).Observe(r.QueueMs / 1000)
	m.prefill.WithLabelValues(name).Observe(r.PrefillMs / 1000)
	m.decode.WithLabelValues(name).Observe((r.LastTokenMs - r.FirstTokenMs) / 1000)
	if r.Stream && r.TokensSent > 1 {
		itl := m.itl.WithLabelValues(name)
		for _, g := range r.GapsMs[:r.TokensSent-1] {
			itl.Observe(g / 1000)
		}
		m.tpot.WithLabelValues(name).Observe((r.LastTokenMs - r.FirstTokenMs) / float64(r.TokensSent-1) / 1000)
	}
}

// observeTGI feeds TGI's families.
func (s *Server) observeTGI(r *Record) {
	m := s.metrics
	name := r.Endpoint
	m.tgiCount.WithLabelValues(name).Inc()
	if r.TokensSent == 0 {
		return
	}
	if r.Outcome == "ok" {
		m.tgiSuccess.WithLabelValues(name).Inc()
	}
	m.tgiQueue.WithLabelValues(name).Observe(r.QueueMs / 1000)
	m.tgiInference.WithLabelValues(name).Observe((r.LastTokenMs - r.ColdStartMs - r.QueueMs) / 1000)
	m.tgiDuration.WithLabelValues(name).Observe(r.LastTokenMs / 1000)
	m.tgiInput.WithLabelValues(name).Observe(float64(r.PromptTokens))
	m.tgiGenerated.WithLabelValues(name).Observe(float64(r.TokensSent))
	m.tgiBatch.WithLabelValues(name, "prefill").Observe(r.PrefillMs / 1000)
	if r.TokensSent > 1 {
		m.tgiTPOT.WithLabelValues(name).Observe((r.LastTokenMs - r.FirstTokenMs) / float64(r.TokensSent-1) / 1000)
		if r.Stream {
			dec := m.tgiBatch.WithLabelValues(name, "decode")
			for _, g := range r.GapsMs[:r.TokensSent-1] {
				dec.Observe(g / 1000)
			}
		}
	}
}
