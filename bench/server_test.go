package bench_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/bench/servermetrics"
	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/emulator"
	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/providers/openai"
)

// reportingConnect is emulatorConnect with the emulator's start report,
// so that each response carries its X-Emulator-Request-Id.
func reportingConnect(srv *emulator.Server) func(context.Context, *bench.Target) (*cloudreq.Client, error) {
	return func(context.Context, *bench.Target) (*cloudreq.Client, error) {
		ad, err := openai.New(openai.Options{BaseURL: srv.URL(), AllowInsecureHTTP: true})
		if err != nil {
			return nil, err
		}
		return cloudreq.New(cloudreq.Options{
			Adapters:    []cloudreq.Adapter{ad},
			CallOptions: cloudreq.CallOptions{Retry: cloudreq.RetryOptions{MaxAttempts: 1}, Timeout: 10 * time.Second},
		}, emulator.WithStartReport())
	}
}

// TestServerDecompositionMatchesEmulator runs a queueing endpoint (2
// slots, 4 workers) through the emulator, scraping its /metrics (found by
// itself from the target's URL): the decomposition's server parts equal
// the queue, prefill and decode the emulator injected (means within 2%),
// per request and from the histograms, and the residual the server does
// not explain equals the transit measured request by request.
func TestServerDecompositionMatchesEmulator(t *testing.T) {
	ep := emulator.Endpoint{Name: "q", Providers: []emulator.Provider{emulator.OpenAI}, Profile: emulator.Profile{
		Name: "q", TTFTMs: emulator.Dist{Mean: 25}, TPOTMs: emulator.Dist{Mean: 3}, OutputTokens: emulator.Dist{Mean: 6}, Slots: 2,
	}}
	srv := startEmulator(t, 1, []emulator.Endpoint{ep})
	tg := bench.Target{Name: "q", Provider: "openai", Model: "q", URL: srv.URL() + "/v1", Stream: true,
		Payload: bench.Payload{PromptTokens: 64, OutputTokens: 6}}
	p := &bench.Plan{Targets: []bench.Target{tg}, Load: bench.Load{Model: bench.LoadClosed, Concurrency: 4},
		Limits: bench.Limits{Requests: 48}, ServerMetricsInterval: bench.Duration(100 * time.Millisecond)}
	res, err := bench.Run(context.Background(), p, bench.Options{Connect: reportingConnect(srv)})
	require.NoError(t, err)
	tr := res.Targets[0]
	require.Zero(t, tr.Counts().Failed, "%v", tr.ErrorExamples)
	require.NotNil(t, tr.Server)
	require.Len(t, tr.Server.Sources, 1)
	src := tr.Server.Sources[0]
	assert.Equal(t, srv.URL()+"/metrics", src.Source)
	assert.Equal(t, "emulator", src.Server)
	assert.GreaterOrEqual(t, src.Scrapes, 3)
	assert.Positive(t, src.Cost.Mean)
	for _, w := range tr.Warnings {
		assert.NotContains(t, w, "server", "no scraping problem")
	}

	// What the emulator injected into the measured requests (no warm-up:
	// every record is one).
	recs := srv.Records()
	require.Len(t, recs, 48)
	var q, pf, dec, first float64
	for _, r := range recs {
		require.Equal(t, "ok", r.Outcome)
		q += r.QueueMs
		pf += r.PrefillMs
		dec += r.LastTokenMs - r.FirstTokenMs
		first += r.FirstTokenMs - r.ColdStartMs
	}
	n := float64(len(recs))
	q, pf, dec, first = q/n, pf/n, dec/n, first/n
	require.Greater(t, q, 5.0, "the endpoint queued")

	ds := tr.Decompose()
	require.Len(t, ds, 2, "an exact row (every request warm) and a histogram row")
	exact, hist := ds[0], ds[1]
	assert.Equal(t, "exact", exact.Method)
	assert.Equal(t, "warm", exact.Start)
	assert.Equal(t, "histogram", hist.Method)
	assert.Equal(t, 48.0, exact.N)
	assert.Equal(t, 48.0, hist.N)
	for _, d := range ds {
		within := func(want, got float64, what string) {
			assert.InEpsilon(t, want, got, 0.02, "%s %s: injected %.3f, decomposed %.3f", d.Method, what, want, got)
		}
		within(q, d.Queue, "queue")
		within(pf, d.Prefill, "prefill")
		within(dec, d.ServerDecode, "decode")
		assert.InDelta(t, d.ClientTTFT, d.Residual+d.Queue+d.Prefill+d.ServerOther, 1e-9, "TTFT = network+client + queue + prefill + server other")
		assert.GreaterOrEqual(t, d.ServerOther, 0.0)
		// The residual is the measured transit: the client's mean TTFT
		// less the mean of the server's own first-token times (from the
		// records, apart from the join), within 2% of the TTFT.
		transit := tr.Dist(latency.TTFT, "", "").Mean()/1e6 - first
		assert.Positive(t, transit)
		assert.InDelta(t, transit, d.Residual, 0.02*d.ClientTTFT, "%s: residual %.3f ms, transit %.3f ms", d.Method, d.Residual, transit)
	}
	assert.InDelta(t, first, exact.ServerTTFT, 1e-6)

	// The tables and the charts.
	var txt, html bytes.Buffer
	require.NoError(t, res.Render(&txt, bench.FormatText, bench.RenderOptions{}))
	assert.Contains(t, txt.String(), "Where the time went")
	assert.Contains(t, txt.String(), "exact")
	assert.Contains(t, txt.String(), "Server metrics")
	require.NoError(t, res.Render(&html, bench.FormatHTML, bench.RenderOptions{}))
	assert.Contains(t, html.String(), "Where the time went: mean ms per group, stacked")
	assert.Contains(t, html.String(), "network+client")
	assert.Contains(t, html.String(), "server gauges over time")
	assert.Contains(t, html.String(), "server running")

	// The result survives its JSON, and report renders it again.
	var js bytes.Buffer
	require.NoError(t, res.WriteJSON(&js))
	back, err := bench.ParseResult(js.Bytes())
	require.NoError(t, err)
	require.NotNil(t, back.Targets[0].Server)
	d2 := back.Targets[0].Decompose()
	require.Len(t, d2, 2)
	assert.InDelta(t, exact.Residual, d2[0].Residual, 1e-9)
	assert.InDelta(t, hist.Queue, d2[1].Queue, 1e-9)
}

// TestServerMetricsBadInput: an unreachable, a non-Prometheus and a
// restarting /metrics are warnings in the result; the run succeeds.
func TestServerMetricsBadInput(t *testing.T) {
	srv := startEmulator(t, 1, []emulator.Endpoint{fastEndpoint("fast", 2)})
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprint(w, "<!doctype html><p>dashboard</p>")
	}))
	defer html.Close()
	var scrapes atomic.Int64
	restarting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n := scrapes.Add(1)
		v := 100 + 10*n
		if n >= 4 {
			v = n // restarted: the counter starts again from a few
		}
		_, _ = fmt.Fprintf(w, "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total %d\n", v)
	}))
	defer restarting.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	goneURL := gone.URL + "/metrics"
	gone.Close()

	tg := target("fast", true)
	tg.ServerMetrics = []string{html.URL + "/metrics", goneURL, restarting.URL + "/metrics"}
	p := &bench.Plan{Targets: []bench.Target{tg}, Limits: bench.Limits{Requests: 30},
		Load: bench.Load{Model: bench.LoadConstant, Rate: 50}, ServerMetricsInterval: bench.Duration(60 * time.Millisecond)}
	res, err := bench.Run(context.Background(), p, bench.Options{Connect: emulatorConnect(srv)})
	require.NoError(t, err)
	tr := res.Targets[0]
	assert.Zero(t, tr.Counts().Failed)
	require.NotNil(t, tr.Server)
	require.Len(t, tr.Server.Sources, 3)
	w := strings.Join(tr.Warnings, "\n")
	assert.Contains(t, w, "not a Prometheus exposition")
	assert.Contains(t, w, "unreachable")
	assert.Contains(t, w, "restarted 1 time(s)")
	r := tr.Server.Sources[2]
	assert.Equal(t, 1, r.Restarts)
	require.Len(t, r.Families, 1)
	k := scrapes.Load()
	// Window from the 2nd scrape (120) to the 3rd (130), then from zero
	// to the last (k): 10 + 4 + (k − 4).
	assert.Equal(t, float64(10+k), *r.Families[0].Series[0].Delta)

	// A bad URL in a plan is refused before the run.
	bad := target("fast", true)
	bad.ServerMetrics = []string{"localhost:9000/metrics"}
	_, err = bench.Run(context.Background(), &bench.Plan{Targets: []bench.Target{bad}}, bench.Options{Connect: emulatorConnect(srv)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "server_metrics")
}

// TestMergeServerMetrics: several machines scraping one server do not
// double its counters (one summary per source is kept, the longest
// window's), while their per-request groups add up.
func TestMergeServerMetrics(t *testing.T) {
	mk := func(host string, begin time.Time, window time.Duration, reqs float64) *bench.Result {
		delta := 5 * reqs
		sum := &servermetrics.Summary{Source: "http://server/metrics", Server: "vllm", Begin: begin, End: begin.Add(window), Scrapes: 3,
			Families: []*servermetrics.Family{{Name: "vllm:request_queue_time_seconds", Type: "histogram", Known: true,
				Series: []*servermetrics.Series{{Role: servermetrics.RoleQueue, Histogram: &servermetrics.HistogramDelta{Count: reqs, Sum: reqs * 0.01}}}},
				{Name: "vllm:generation_tokens_total", Type: "counter", Known: true, Series: []*servermetrics.Series{{Role: servermetrics.RoleGenerationTokens, Delta: &delta}}}}}
		own := &servermetrics.Summary{Source: "http://" + host + "/metrics", Begin: begin, End: begin.Add(window)}
		tr := &bench.TargetResult{Name: "t", Begin: begin, Wall: bench.Duration(window), Server: &bench.ServerResult{
			Sources: []*servermetrics.Summary{sum, own},
			Exact:   []*bench.ExactGroup{{Start: "warm", N: 10, Streamed: 10, ClientTTFT: 300, StreamedE2E: 900, StreamedQ: 100, StreamedPref: 150, ServerTTFT: 260}},
		}}
		return &bench.Result{Version: bench.ResultVersion, Plan: &bench.Plan{}, Begin: begin, End: begin.Add(window),
			Hosts: []bench.Host{{Name: host, CPUs: 2}}, Targets: []*bench.TargetResult{tr}}
	}
	t0 := time.Unix(1_700_000_000, 0)
	a := mk("a", t0, 10*time.Second, 100)
	b := mk("b", t0.Add(time.Second), 12*time.Second, 120)
	m, err := bench.Merge(a, b)
	require.NoError(t, err)
	s := m.Targets[0].Server
	require.Len(t, s.Sources, 3, "the shared server once, each machine's own")
	shared := s.Sources[0]
	assert.Equal(t, 2, shared.Machines)
	_, n, _, _ := shared.Mean(servermetrics.RoleQueue)
	assert.Equal(t, 120.0, n, "the longest window's, not 100 + 120")
	assert.Equal(t, 600.0, *shared.Families[1].Series[0].Delta)
	require.Len(t, s.Exact, 1)
	assert.Equal(t, int64(20), s.Exact[0].N)
	d := m.Targets[0].Decompose()
	require.NotEmpty(t, d)
	assert.InDelta(t, 30.0, d[0].ClientTTFT, 1e-9)
	assert.InDelta(t, 4.0, d[0].Residual, 1e-9, "30 ms at the client, 26 at the server")
	assert.False(t, math.IsNaN(d[0].Residual))
	// The inputs are left as they were.
	assert.Zero(t, a.Targets[0].Server.Sources[0].Machines)
}

// TestServerDecompositionByClass: the exact split is per class; a class
// of long prompts has its longer prefill, equal to what the emulator
// injected into that class's requests (within 2%).
func TestServerDecompositionByClass(t *testing.T) {
	ep := emulator.Endpoint{Name: "c", Providers: []emulator.Provider{emulator.OpenAI}, Profile: emulator.Profile{
		Name: "c", TTFTMs: emulator.Dist{Mean: 10}, TPOTMs: emulator.Dist{Mean: 1}, OutputTokens: emulator.Dist{Mean: 3},
		PrefillMsPer1K: 10, RefPromptTokens: 16, Slots: 64,
	}}
	srv := startEmulator(t, 1, []emulator.Endpoint{ep})
	tg := bench.Target{Name: "c", Provider: "openai", Model: "c", URL: srv.URL(), Stream: true, Payload: bench.Payload{OutputTokens: 3}}
	mix := &bench.Mix{Classes: []bench.Class{
		{Name: "short", Weight: 1, Payload: &bench.Payload{PromptTokens: 16, OutputTokens: 3}},
		{Name: "long", Weight: 1, Payload: &bench.Payload{PromptTokens: 4016, OutputTokens: 3}},
	}}
	p := &bench.Plan{Targets: []bench.Target{tg}, Load: bench.Load{Model: bench.LoadClosed, Concurrency: 2},
		Limits: bench.Limits{Requests: 30}, Mix: mix, ServerMetricsInterval: bench.Duration(100 * time.Millisecond)}
	res, err := bench.Run(context.Background(), p, bench.Options{Connect: reportingConnect(srv)})
	require.NoError(t, err)
	tr := res.Targets[0]
	require.Zero(t, tr.Counts().Failed, "%v", tr.ErrorExamples)
	injected := map[bool][]float64{} // long → prefills
	for _, r := range srv.Records() {
		injected[r.PromptTokens > 1000] = append(injected[r.PromptTokens > 1000], r.PrefillMs)
	}
	mean := func(v []float64) float64 {
		s := 0.0
		for _, x := range v {
			s += x
		}
		return s / float64(len(v))
	}
	rows := map[string]bench.Decomposition{}
	for _, d := range tr.Decompose() {
		if d.Method == "exact" {
			rows[d.Class] = d
		}
	}
	require.Contains(t, rows, "short")
	require.Contains(t, rows, "long")
	assert.InEpsilon(t, mean(injected[false]), rows["short"].Prefill, 0.02)
	assert.InEpsilon(t, mean(injected[true]), rows["long"].Prefill, 0.02)
	assert.Greater(t, rows["long"].Prefill, rows["short"].Prefill+30, "4,000 more prompt tokens at 10 ms per 1,000")
	assert.Equal(t, float64(len(injected[true])), rows["long"].N)
}
