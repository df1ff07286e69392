package servermetrics

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vllmExposition is a vLLM /metrics page with the documented names and
// types (prometheus_client's text format: counters with _total, histogram
// buckets with le), at a point where the server has served `reqs`
// requests, each with queue q, prefill p and decode d seconds.
func vllmExposition(reqs int, q, p, d float64, running, waiting, kv float64, extra string) string {
	var b strings.Builder
	n := float64(reqs)
	hist := func(name string, v float64, bounds []float64) {
		fmt.Fprintf(&b, "# HELP %s Histogram.\n# TYPE %s histogram\n", name, name)
		for _, le := range bounds {
			c := 0.0
			if v <= le {
				c = n
			}
			fmt.Fprintf(&b, "%s_bucket{le=\"%g\",model_name=\"llama\"} %g\n", name, le, c)
		}
		fmt.Fprintf(&b, "%s_bucket{le=\"+Inf\",model_name=\"llama\"} %g\n", name, n)
		fmt.Fprintf(&b, "%s_count{model_name=\"llama\"} %g\n%s_sum{model_name=\"llama\"} %g\n", name, n, name, n*v)
	}
	bounds := []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5}
	hist("vllm:request_queue_time_seconds", q, bounds)
	hist("vllm:request_prefill_time_seconds", p, bounds)
	hist("vllm:request_decode_time_seconds", d, bounds)
	hist("vllm:time_to_first_token_seconds", q+p, bounds)
	hist("vllm:e2e_request_latency_seconds", q+p+d, bounds)
	fmt.Fprintf(&b, "# HELP vllm:num_requests_running Running.\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"llama\"} %g\n", running)
	fmt.Fprintf(&b, "# HELP vllm:num_requests_waiting Waiting.\n# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"llama\"} %g\n", waiting)
	fmt.Fprintf(&b, "# HELP vllm:kv_cache_usage_perc KV.\n# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{model_name=\"llama\"} %g\n", kv)
	fmt.Fprintf(&b, "# HELP vllm:prefix_cache_hits_total Hits.\n# TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total{model_name=\"llama\"} %g\n", 10*n)
	fmt.Fprintf(&b, "# HELP vllm:prefix_cache_queries_total Queries.\n# TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total{model_name=\"llama\"} %g\n", 40*n)
	fmt.Fprintf(&b, "# HELP vllm:generation_tokens_total Tokens.\n# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{model_name=\"llama\"} %g\n", 100*n)
	fmt.Fprintf(&b, "# HELP process_cpu_seconds_total CPU.\n# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %g\n", 3+n/10)
	b.WriteString(extra)
	return b.String()
}

// parse parses an exposition and returns the call that feeds it to a
// Reducer (as the window's start when mark is set), one second after the
// previous one.
func parse(t *testing.T, s string) (at time.Time, f func(*Reducer, bool)) {
	t.Helper()
	fams, err := Parse(strings.NewReader(s))
	require.NoError(t, err)
	return time.Time{}, func(r *Reducer, mark bool) {
		at := r.last.Add(time.Second)
		if r.last.IsZero() {
			at = time.Unix(100, 0)
		}
		if mark {
			r.Mark(at, fams)
		} else {
			r.Add(at, fams)
		}
	}
}

// TestReduceVLLM parses and reduces three vLLM scrapes: a baseline with
// 10 requests served before the window, the window's start at 10 and its
// end at 30 (20 requests, queue 0.2 s, prefill 0.07 s, decode 0.8 s).
func TestReduceVLLM(t *testing.T) {
	r := NewReducer()
	_, base := parse(t, vllmExposition(10, 0.2, 0.07, 0.8, 9, 9, 0.9, ""))
	_, start := parse(t, vllmExposition(10, 0.2, 0.07, 0.8, 1, 0, 0.1, ""))
	_, mid := parse(t, vllmExposition(20, 0.2, 0.07, 0.8, 4, 2, 0.5, ""))
	_, end := parse(t, vllmExposition(30, 0.2, 0.07, 0.8, 7, 4, 0.3, ""))
	base(r, false)
	start(r, true)
	mid(r, false)
	end(r, false)
	s := r.Summary()
	require.NotNil(t, s)
	assert.Equal(t, "vllm", s.Server)
	assert.Zero(t, s.Restarts)

	for _, c := range []struct {
		role Role
		mean float64
	}{{RoleQueue, 0.2}, {RolePrefill, 0.07}, {RoleDecode, 0.8}, {RoleTTFT, 0.27}, {RoleE2E, 1.07}} {
		mean, n, fam, ok := s.Mean(c.role)
		require.True(t, ok, c.role)
		assert.InDelta(t, c.mean, mean, 1e-9, c.role)
		assert.Equal(t, 20.0, n, "only the window's requests: %s", fam)
	}
	// Quantiles are bucket estimates: every queue time (0.2 s) is in the
	// (0.1, 0.25] bucket, so p50 interpolates to its middle.
	h, fam, ok := s.Histogram(RoleQueue)
	require.True(t, ok)
	assert.Equal(t, "vllm:request_queue_time_seconds", fam)
	p50, ok := h.Quantile(0.5)
	require.True(t, ok)
	assert.InDelta(t, 0.175, p50, 1e-9)
	p100, _ := h.Quantile(1)
	assert.InDelta(t, 0.25, p100, 1e-9)

	// Gauges over the window's three scrapes, not the baseline's.
	g, _, ok := s.Gauge(RoleRunning)
	require.True(t, ok)
	assert.Equal(t, GaugeStats{Min: 1, Mean: 4, Max: 7, Last: 7, N: 3}, g)
	g, _, _ = s.Gauge(RoleKVCache)
	assert.InDelta(t, 0.3, g.Mean, 1e-9)
	assert.InDelta(t, 0.5, g.Max, 1e-9)
	require.Len(t, s.Over, 3)
	assert.Equal(t, 2.0, s.Over[1].Gauges[RoleWaiting])

	// Counters as deltas; an unknown family kept raw.
	hits, _ := s.counter(RolePrefixHits)
	queries, _ := s.counter(RolePrefixQueries)
	assert.Equal(t, 200.0, hits)
	assert.Equal(t, 800.0, queries)
	var cpu *Family
	for _, f := range s.Families {
		if f.Name == "process_cpu_seconds_total" {
			cpu = f
		}
	}
	require.NotNil(t, cpu, "unknown families are kept")
	assert.False(t, cpu.Known)
	assert.InDelta(t, 2.0, *cpu.Series[0].Delta, 1e-9)
}

// TestReduceRestart: a counter that goes back is a restart, counted from
// zero after it.
func TestReduceRestart(t *testing.T) {
	r := NewReducer()
	_, a := parse(t, vllmExposition(50, 0.1, 0.1, 0.1, 0, 0, 0, ""))
	_, b := parse(t, vllmExposition(60, 0.1, 0.1, 0.1, 0, 0, 0, ""))
	_, c := parse(t, vllmExposition(5, 0.1, 0.1, 0.1, 0, 0, 0, "")) // restarted, then 5 served
	_, d := parse(t, vllmExposition(8, 0.1, 0.1, 0.1, 0, 0, 0, ""))
	a(r, true)
	b(r, false)
	c(r, false)
	d(r, false)
	s := r.Summary()
	assert.Equal(t, 1, s.Restarts)
	_, n, _, _ := s.Mean(RoleQueue)
	assert.Equal(t, 18.0, n, "10 before the restart, 5 + 3 after")
	tok, _ := s.counter(RoleGenerationTokens)
	assert.Equal(t, 1800.0, tok)
}

// tgiExposition is a TGI /metrics page (metrics-exporter-prometheus: no
// _total on counters) after n requests of queue q, inference i seconds.
func tgiExposition(n int, q, i float64) string {
	var b strings.Builder
	hist := func(name, labels string, v float64, cnt int) {
		if !strings.HasPrefix(labels, `method="decode"`) {
			fmt.Fprintf(&b, "# TYPE %s histogram\n", name)
		}
		for _, le := range []string{"0.005", "0.05", "0.5", "5", "+Inf"} {
			c := 0
			if le == "+Inf" || v <= mustFloat(le) {
				c = cnt
			}
			fmt.Fprintf(&b, "%s_bucket{%sle=\"%s\"} %d\n", name, labels, le, c)
		}
		fmt.Fprintf(&b, "%s_sum{%s} %g\n%s_count{%s} %d\n", name, strings.TrimSuffix(labels, ","), v*float64(cnt), name, strings.TrimSuffix(labels, ","), cnt)
	}
	hist("tgi_request_queue_duration", "", q, n)
	hist("tgi_request_inference_duration", "", i, n)
	hist("tgi_request_duration", "", q+i+0.001, n)
	hist("tgi_batch_inference_duration", `method="prefill",`, 0.04, n)
	hist("tgi_batch_inference_duration", `method="decode",`, 0.01, 20*n)
	fmt.Fprintf(&b, "# TYPE tgi_request_count counter\ntgi_request_count %d\n", n)
	fmt.Fprintf(&b, "# TYPE tgi_request_success counter\ntgi_request_success %d\n", n)
	fmt.Fprintf(&b, "# TYPE tgi_queue_size gauge\ntgi_queue_size %d\n", n%3)
	fmt.Fprintf(&b, "# TYPE tgi_batch_current_size gauge\ntgi_batch_current_size %d\n", n%5)
	return b.String()
}

func mustFloat(s string) float64 {
	var f float64
	_, _ = fmt.Sscanf(s, "%g", &f)
	return f
}

func TestReduceTGI(t *testing.T) {
	r := NewReducer()
	_, a := parse(t, tgiExposition(4, 0.3, 1.2))
	_, b := parse(t, tgiExposition(16, 0.3, 1.2))
	a(r, true)
	b(r, false)
	s := r.Summary()
	assert.Equal(t, "tgi", s.Server)
	mean, n, fam, ok := s.Mean(RoleQueue)
	require.True(t, ok)
	assert.Equal(t, "tgi_request_queue_duration", fam)
	assert.InDelta(t, 0.3, mean, 1e-9)
	assert.Equal(t, 12.0, n)
	mean, _, _, ok = s.Mean(RoleInference)
	require.True(t, ok)
	assert.InDelta(t, 1.2, mean, 1e-9)
	// Prefill and decode are per batch in TGI: the method label picks them.
	_, _, _, ok = s.Mean(RolePrefill)
	assert.False(t, ok, "TGI has no per-request prefill")
	mean, n, _, ok = s.Mean(RolePrefillBatch)
	require.True(t, ok)
	assert.InDelta(t, 0.04, mean, 1e-9)
	assert.Equal(t, 12.0, n)
	mean, n, _, _ = s.Mean(RoleDecodeStep)
	assert.InDelta(t, 0.01, mean, 1e-9)
	assert.Equal(t, 240.0, n)
	_, _, ok = s.Gauge(RoleWaiting)
	assert.True(t, ok)
	req, _ := s.counter(RoleRequests)
	assert.Equal(t, 12.0, req)
}

// TestTritonCounterMean: Triton's durations are cumulative µs counters;
// the mean is their delta over the successful requests'.
func TestTritonCounterMean(t *testing.T) {
	page := func(n int) string {
		return fmt.Sprintf("# TYPE nv_inference_request_success counter\nnv_inference_request_success{model=\"m\",version=\"1\"} %d\n"+
			"# TYPE nv_inference_queue_duration_us counter\nnv_inference_queue_duration_us{model=\"m\",version=\"1\"} %d\n", n, n*1500)
	}
	r := NewReducer()
	_, a := parse(t, page(2))
	_, b := parse(t, page(12))
	a(r, true)
	b(r, false)
	s := r.Summary()
	assert.Equal(t, "triton", s.Server)
	mean, n, _, ok := s.Mean(RoleQueue)
	require.True(t, ok)
	assert.InDelta(t, 0.0015, mean, 1e-12)
	assert.Equal(t, 10.0, n)
}

// TestModelFilter keeps the target's model's series when the server has
// them, and every series when it has none of its name.
func TestModelFilter(t *testing.T) {
	page := "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"a\"} 1\nvllm:num_requests_running{model_name=\"b\"} 5\n"
	fams, err := Parse(strings.NewReader(page))
	require.NoError(t, err)
	r := NewReducer("b")
	r.Mark(time.Unix(1, 0), fams)
	g, _, _ := r.Summary().Gauge(RoleRunning)
	assert.Equal(t, 5.0, g.Mean)
	r = NewReducer("other")
	r.Mark(time.Unix(1, 0), fams)
	g, _, _ = r.Summary().Gauge(RoleRunning)
	assert.Equal(t, 6.0, g.Mean, "no series of that model: all are kept")
}

func TestParseRefusesNonPrometheus(t *testing.T) {
	_, err := Parse(strings.NewReader("<html><body>not metrics</body></html>"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a Prometheus exposition")
}

// TestScraper scrapes an httptest server whose counters grow: baseline,
// mark, periodic scrapes, stop; the cost is measured.
func TestScraper(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := int(served.Add(1))
		_, _ = fmt.Fprint(w, vllmExposition(10*n, 0.1, 0.2, 0.3, float64(n), 0, 0.5, ""))
	}))
	defer srv.Close()
	ctx := context.Background()
	s, err := Start(ctx, Options{URL: srv.URL + "/metrics", Interval: 60 * time.Millisecond})
	require.NoError(t, err)
	s.Mark(ctx)
	time.Sleep(200 * time.Millisecond)
	sum := s.Stop(ctx)
	require.NotNil(t, sum)
	k := int(served.Load())
	assert.Equal(t, k, sum.Scrapes)
	assert.GreaterOrEqual(t, k, 4, "baseline, mark, ticks, stop")
	assert.Zero(t, sum.Failed)
	assert.Empty(t, sum.Warnings)
	_, n, _, ok := sum.Mean(RoleQueue)
	require.True(t, ok)
	assert.Equal(t, float64(10*(k-2)), n, "from the mark's scrape (the 2nd) to the last")
	assert.Positive(t, sum.Cost.Mean)
	assert.GreaterOrEqual(t, sum.Cost.Max, sum.Cost.Mean)
	assert.Positive(t, sum.Cost.Bytes)
	assert.Equal(t, srv.URL+"/metrics", sum.Source)
}

// TestScraperBadEndpoints: unreachable, slow and non-Prometheus endpoints
// are warnings in the summary; the scraper never fails.
func TestScraperBadEndpoints(t *testing.T) {
	ctx := context.Background()
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprint(w, "<html>hello</html>")
	}))
	defer html.Close()
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	gone := httptest.NewServer(http.NotFoundHandler())
	goneURL := gone.URL
	gone.Close()
	for _, c := range []struct{ url, want string }{
		{html.URL + "/metrics", "not a Prometheus exposition"},
		{slow.URL + "/metrics", "no answer within 80ms"},
		{goneURL + "/metrics?token=SECRET", "unreachable"},
	} {
		s, err := Start(ctx, Options{URL: c.url, Interval: 100 * time.Millisecond, Timeout: 80 * time.Millisecond})
		require.NoError(t, err)
		s.Mark(ctx)
		sum := s.Stop(ctx)
		require.NotNil(t, sum, c.url)
		assert.Zero(t, sum.Scrapes)
		assert.GreaterOrEqual(t, sum.Failed, 3)
		require.NotEmpty(t, sum.Warnings)
		assert.Contains(t, sum.Warnings[0], c.want)
		assert.Contains(t, strings.Join(sum.Warnings, "\n"), "no scrape succeeded")
		assert.NotContains(t, strings.Join(sum.Warnings, "\n"), "SECRET")
	}
	_, err := Start(ctx, Options{URL: "ftp://x/metrics"})
	require.Error(t, err)
}

// TestTwoFamiliesOfOneRole: a server writing vLLM's and TGI's families
// (the emulator) is read through vLLM's, not their sum.
func TestTwoFamiliesOfOneRole(t *testing.T) {
	page := "# TYPE tgi_batch_current_size gauge\ntgi_batch_current_size 3\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 5\n" +
		"# TYPE tgi_request_queue_duration histogram\ntgi_request_queue_duration_bucket{le=\"+Inf\"} 1\ntgi_request_queue_duration_sum 9\ntgi_request_queue_duration_count 1\n" +
		"# TYPE vllm:request_queue_time_seconds histogram\nvllm:request_queue_time_seconds_bucket{le=\"+Inf\"} 2\nvllm:request_queue_time_seconds_sum 1\nvllm:request_queue_time_seconds_count 2\n"
	fams, err := Parse(strings.NewReader(page))
	require.NoError(t, err)
	r := NewReducer()
	r.Mark(time.Unix(1, 0), map[string]*dto.MetricFamily{})
	r.Add(time.Unix(2, 0), fams)
	s := r.Summary()
	require.Len(t, s.Over, 1)
	assert.Equal(t, 5.0, s.Over[0].Gauges[RoleRunning])
	g, fam, _ := s.Gauge(RoleRunning)
	assert.Equal(t, "vllm:num_requests_running", fam)
	assert.Equal(t, 5.0, g.Mean)
	mean, _, fam, _ := s.Mean(RoleQueue)
	assert.Equal(t, "vllm:request_queue_time_seconds", fam)
	assert.Equal(t, 0.5, mean)
}

// TestReduceKVCacheV0Name: vLLM V0's vllm:gpu_cache_usage_perc is read as
// the KV cache as V1's vllm:kv_cache_usage_perc is.
func TestReduceKVCacheV0Name(t *testing.T) {
	r := NewReducer()
	for i, kv := range []float64{0.2, 0.4, 0.9} {
		_, f := parse(t, fmt.Sprintf("# TYPE vllm:gpu_cache_usage_perc gauge\nvllm:gpu_cache_usage_perc{model_name=\"llama\"} %g\n", kv))
		f(r, i == 0)
	}
	s := r.Summary()
	require.NotNil(t, s)
	assert.Equal(t, "vllm", s.Server)
	g, fam, ok := s.Gauge(RoleKVCache)
	require.True(t, ok)
	assert.Equal(t, "vllm:gpu_cache_usage_perc", fam)
	assert.InDelta(t, 0.5, g.Mean, 1e-9)
	assert.Equal(t, 0.9, g.Max)
	require.Len(t, s.Over, 3)
	assert.Equal(t, 0.4, s.Over[1].Gauges[RoleKVCache])
}
