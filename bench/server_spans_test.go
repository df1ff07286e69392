package bench_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/bench"
	"github.com/cloudinfer/cloudinfer/bench/servermetrics"
	"github.com/cloudinfer/cloudinfer/emulator"
)

// TestServerDecompositionFromSpans runs a queueing endpoint through an
// emulator that writes vLLM's per-request spans to a file (as a
// collector's file exporter does), the target naming that file: each
// measured request is sent with an X-Request-Id of its own, the spans
// (chatcmpl-<id>) are joined with them, and the exact split from the
// spans equals the one from the emulator's records, group by group.
func TestServerDecompositionFromSpans(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spans.jsonl")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	ep := emulator.Endpoint{Name: "q", Providers: []emulator.Provider{emulator.OpenAI}, Profile: emulator.Profile{
		Name: "q", TTFTMs: emulator.Dist{Mean: 20}, TPOTMs: emulator.Dist{Mean: 2}, OutputTokens: emulator.Dist{Mean: 5}, Slots: 2,
	}}
	srv, err := emulator.New(emulator.Options{TimeScale: 1, Seed: 1, Endpoints: []emulator.Endpoint{ep}, OTLPWriter: f})
	require.NoError(t, err)
	require.NoError(t, srv.Start("127.0.0.1:0", ""))
	t.Cleanup(func() { _ = srv.Close() })

	tg := bench.Target{Name: "q", Provider: "openai", Model: "q", URL: srv.URL() + "/v1", Stream: true,
		Payload: bench.Payload{PromptTokens: 64, OutputTokens: 5}, ServerRequests: path}
	p := &bench.Plan{Targets: []bench.Target{tg}, Load: bench.Load{Model: bench.LoadClosed, Concurrency: 4},
		Limits: bench.Limits{Requests: 32, Warmup: 2}, ServerMetricsInterval: bench.Duration(100 * time.Millisecond)}
	res, err := bench.Run(context.Background(), p, bench.Options{Connect: reportingConnect(srv)})
	require.NoError(t, err)
	tr := res.Targets[0]
	require.Zero(t, tr.Counts().Failed, "%v", tr.ErrorExamples)
	for _, w := range tr.Warnings {
		assert.NotContains(t, w, "span")
		assert.NotContains(t, w, "server")
	}
	require.NotNil(t, tr.Server)

	// Every measured request carried an X-Request-Id of its own (32 hex
	// digits); the warm-up's none.
	recs := srv.Records()
	require.Len(t, recs, 34)
	seen := map[string]bool{}
	for _, r := range recs {
		if r.ClientRequestID == "" {
			continue
		}
		assert.Regexp(t, `^[0-9a-f]{32}$`, r.ClientRequestID)
		assert.False(t, seen[r.ClientRequestID], "ids are not reused")
		seen[r.ClientRequestID] = true
	}
	assert.Len(t, seen, 32)

	j := tr.Server.SpanJoin
	require.NotNil(t, j)
	assert.Equal(t, bench.SpanJoin{File: path, Spans: 34, Matched: 32, Others: 2}, *j, "the warm-up's 2 spans are no measured request's")

	ds := tr.Decompose()
	require.Len(t, ds, 3, "exact, exact (vLLM spans), histogram")
	exact, spans := ds[0], ds[1]
	assert.Equal(t, bench.MethodExact, exact.Method)
	assert.Equal(t, bench.MethodSpans, spans.Method)
	assert.Equal(t, path, spans.Source)
	assert.Equal(t, bench.MethodHistogram, ds[2].Method)
	assert.Equal(t, "warm", spans.Start)
	assert.Equal(t, 32.0, spans.N)
	assert.Equal(t, exact.N, spans.N)
	assert.Greater(t, exact.Queue, 5.0, "the endpoint queued")
	for _, d := range ds {
		t.Logf("%-20s n %.0f: client TTFT %.3f = network+client %.3f + queue %.3f + prefill %.3f + server other %.3f; server decode %.3f, client E2E %.3f ms",
			d.Method, d.N, d.ClientTTFT, d.Residual, d.Queue, d.Prefill, d.ServerOther, d.ServerDecode, d.ClientE2E)
	}
	for _, c := range []struct {
		what        string
		want, got   float64
		wantE, gotE float64
	}{
		{"client TTFT", exact.ClientTTFT, spans.ClientTTFT, 0, 0},
		{"queue", exact.Queue, spans.Queue, 0, 0},
		{"prefill", exact.Prefill, spans.Prefill, 0, 0},
		{"server TTFT", exact.ServerTTFT, spans.ServerTTFT, 0, 0},
		{"server other", exact.ServerOther, spans.ServerOther, 0, 0},
		{"network+client", exact.Residual, spans.Residual, 0, 0},
		{"server decode", exact.ServerDecode, spans.ServerDecode, 0, 0},
		{"decode transit", exact.DecodeResidual, spans.DecodeResidual, 0, 0},
	} {
		assert.InDelta(t, c.want, c.got, 1e-9, "%s: records %.6f, spans %.6f", c.what, c.want, c.got)
	}

	var txt bytes.Buffer
	require.NoError(t, res.Render(&txt, bench.FormatText, bench.RenderOptions{}))
	assert.Contains(t, txt.String(), "exact (vLLM spans)")
	assert.Contains(t, txt.String(), "Server per-request spans")

	// The result survives its JSON; a merge adds the groups and the counts.
	var js bytes.Buffer
	require.NoError(t, res.WriteJSON(&js))
	back, err := bench.ParseResult(js.Bytes())
	require.NoError(t, err)
	other, err := bench.ParseResult(js.Bytes())
	require.NoError(t, err)
	other.Hosts[0].Name += "-2" // another machine's run of the same
	m, err := bench.Merge(back, other)
	require.NoError(t, err)
	ms := m.Targets[0].Server
	assert.Equal(t, int64(64), ms.SpanJoin.Matched)
	require.Len(t, ms.Spans, 1)
	assert.Equal(t, int64(64), ms.Spans[0].N)
	md := m.Targets[0].Decompose()
	require.Len(t, md, 3)
	assert.InDelta(t, spans.Residual, md[1].Residual, 1e-9, "means of twice the same requests")
}

// TestServerSpansUnmatched: a spans file with none of the run's requests
// (another server's: the vLLM testdata file), read once, leaves every
// measured request unmatched, said in a warning; a file that is not there
// is a warning; neither fails the run.
func TestServerSpansUnmatched(t *testing.T) {
	srv := startEmulator(t, 1, []emulator.Endpoint{fastEndpoint("fast", 2)})
	for _, c := range []struct {
		file string
		want string
	}{
		{"servermetrics/testdata/vllm-spans.jsonl", "8 of 8 measured requests had no span"},
		{filepath.Join(t.TempDir(), "none.jsonl"), "server per-request spans:"},
	} {
		tg := bench.Target{Name: "fast", Provider: "openai", Model: "fast", URL: srv.URL() + "/v1", Stream: true,
			Payload: bench.Payload{PromptTokens: 8, OutputTokens: 2}, ServerRequests: c.file, ServerRequestsWait: bench.Duration(-1),
			ServerMetrics: []string{"off"}}
		p := &bench.Plan{Targets: []bench.Target{tg}, Load: bench.Load{Model: bench.LoadClosed, Concurrency: 2},
			Limits: bench.Limits{Requests: 8}}
		res, err := bench.Run(context.Background(), p, bench.Options{Connect: emulatorConnect(srv)})
		require.NoError(t, err)
		tr := res.Targets[0]
		assert.Equal(t, int64(8), tr.Counts().Requests)
		require.NotNil(t, tr.Server, c.file)
		assert.Empty(t, tr.Server.Sources, "server_metrics off: no scrape")
		var warned bool
		for _, w := range tr.Warnings {
			if bytes.Contains([]byte(w), []byte(c.want)) {
				warned = true
			}
		}
		assert.True(t, warned, "%s: %v", c.file, tr.Warnings)
		if c.file == "servermetrics/testdata/vllm-spans.jsonl" {
			assert.Equal(t, bench.SpanJoin{File: c.file, Spans: 5, Unmatched: 8, Others: 5, Bad: 1}, *tr.Server.SpanJoin)
			assert.Empty(t, tr.Decompose())
		}
	}
}

// TestKVCacheChartShares: the HTML report's KV-cache chart draws the
// emulator's KV gauge with the client's p95 as a share of its largest, on
// one percent axis.
func TestKVCacheChartShares(t *testing.T) {
	srv := startEmulator(t, 1, []emulator.Endpoint{fastEndpoint("fast", 20)})
	tg := bench.Target{Name: "fast", Provider: "openai", Model: "fast", URL: srv.URL() + "/v1", Stream: true,
		Payload: bench.Payload{PromptTokens: 64, OutputTokens: 2}}
	p := &bench.Plan{Targets: []bench.Target{tg}, Load: bench.Load{Model: bench.LoadClosed, Concurrency: 4},
		Limits: bench.Limits{Requests: 40}, ServerMetricsInterval: bench.Duration(50 * time.Millisecond)}
	res, err := bench.Run(context.Background(), p, bench.Options{Connect: emulatorConnect(srv)})
	require.NoError(t, err)
	src := res.Targets[0].Server.Sources[0]
	g, fam, ok := src.Gauge(servermetrics.RoleKVCache)
	require.True(t, ok)
	assert.Equal(t, "vllm:kv_cache_usage_perc", fam)
	assert.Positive(t, g.Max, "4 running requests of 64 prompt tokens hold blocks")
	assert.LessOrEqual(t, g.Max, 4*5/float64(emulator.DefaultKVCacheTokens/emulator.PrefixBlockTokens)+1e-12, "at most 4 × ⌈(64+2)/16⌉ blocks")
	var html bytes.Buffer
	require.NoError(t, res.Render(&html, bench.FormatHTML, bench.RenderOptions{}))
	assert.Contains(t, html.String(), "server KV cache % and client p95 total (% of its largest) over time")
	assert.Contains(t, html.String(), "client p95 total, % of its largest (")
}
