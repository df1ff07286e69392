package telemetry

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	colmetric "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/cloudreq/cloudreqtest"
	"github.com/cloudinfer/cloudinfer/errcodes"
)

// benchLoad runs a short, bounded load of streamed calls, as a benchmark
// run would; the first call's first attempt is throttled and retried, and
// its second served by a cold model.
func benchLoad(ctx context.Context, obs *Observer, calls int, done *atomic.Int64) error {
	chunks := []cloudreq.StreamChunk{{Text: "a"}, {Text: "b"}, {Text: "c", Usage: &cloudreq.Usage{InputTokens: 3, OutputTokens: 3}}}
	fake := &cloudreqtest.Adapter{Outcomes: []cloudreqtest.Outcome{
		{Err: errcodes.New(errcodes.Throttled, "queue full")},
		{Response: &cloudreq.CloudResponse{ServerStart: &cloudreq.ServerStart{Cold: true, Setup: 5 * time.Millisecond}},
			Chunks: chunks, ChunkDelay: time.Millisecond},
		{Chunks: chunks, ChunkDelay: time.Millisecond},
	}}
	c, err := cloudreq.New(cloudreq.Options{
		Adapters: []cloudreq.Adapter{fake},
		CallOptions: cloudreq.CallOptions{
			Retry: cloudreq.RetryOptions{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond, NoBudget: true},
		},
	},
		WithObserver(obs))
	if err != nil {
		return err
	}
	defer c.Close()
	for i := 0; i < calls && ctx.Err() == nil; i++ {
		s, err := c.Stream(ctx, generateReq())
		if err != nil {
			return err
		}
		for s.Next() {
		}
		if err := s.Err(); err != nil {
			return err
		}
		done.Add(1)
	}
	return nil
}

func TestPrometheusScrapeDuringRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := ServePrometheus(ctx, "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Shutdown(context.Background())) }()
	obs, err := New(Options{MeterProvider: p.MeterProvider})
	require.NoError(t, err)

	const calls = 200
	var done atomic.Int64
	var wg sync.WaitGroup
	var runErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		runErr = benchLoad(ctx, obs, calls, &done)
	}()

	want := []string{
		`gen_ai_client_operation_duration_seconds_bucket{`,
		`gen_ai_client_token_usage_bucket{`,
		`gen_ai_client_operation_time_to_first_chunk_seconds_bucket{`,
		`gen_ai_client_operation_time_per_output_chunk_seconds_bucket{`,
		`cloudinfer_client_operation_retries_total{`,
		`cloudinfer_client_operation_throttles_total{`,
		`cloudinfer_client_operation_cold_start_overhead_seconds_bucket{`,
		`gen_ai_provider_name="openai"`,
		`gen_ai_operation_name="chat"`,
		`le="81.92"`,
		`le="6.7108864e+07"`,
	}
	var body string
	var seenAt int64
	for i := 0; i < 200; i++ { // bounded: 200 × 10 ms
		body = scrape(t, p.URL())
		if strings.Contains(body, want[0]) && strings.Contains(body, want[4]) {
			seenAt = done.Load()
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	wg.Wait()
	require.NoError(t, runErr)
	require.Greater(t, seenAt, int64(0), "metrics appeared while the run was going")
	require.Less(t, seenAt, int64(calls), "the scrape happened during the run, not after it")
	for _, w := range want {
		assert.Contains(t, body, w)
	}
	assert.NotContains(t, body, "the secret prompt")

	final := scrape(t, p.URL())
	assert.Contains(t, final, `gen_ai_client_operation_duration_seconds_count{cloudinfer_endpoint="http://127.0.0.1:8000/v1",cloudinfer_start_kind="warm",gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="llama-3-8b",otel_scope_name="github.com/cloudinfer/cloudinfer/telemetry"`)
	assert.Contains(t, final, `cloudinfer_client_operation_throttles_total{`)
	assert.Regexp(t, `cloudinfer_client_operation_retries_total\{[^}]*error_type="ERR_THROTTLED"[^}]*\} 1\n`, final)
}

func scrape(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

func TestServePrometheusBadAddr(t *testing.T) {
	_, err := ServePrometheus(context.Background(), "127.0.0.1:notaport")
	require.ErrorIs(t, err, errcodes.InvalidParam)
}

// collector is a fake OTLP/HTTP collector.
type collector struct {
	mu      sync.Mutex
	spans   []string
	metrics []string
	headers []string
	paths   []string
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paths = append(c.paths, r.URL.Path)
	c.headers = append(c.headers, r.Header.Get("X-Collector-Key"))
	switch {
	case strings.HasSuffix(r.URL.Path, "/v1/traces"):
		var req coltrace.ExportTraceServiceRequest
		if proto.Unmarshal(b, &req) == nil {
			for _, rs := range req.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					for _, s := range ss.Spans {
						c.spans = append(c.spans, s.Name)
					}
				}
			}
		}
	case strings.HasSuffix(r.URL.Path, "/v1/metrics"):
		var req colmetric.ExportMetricsServiceRequest
		if proto.Unmarshal(b, &req) == nil {
			for _, rm := range req.ResourceMetrics {
				for _, sm := range rm.ScopeMetrics {
					for _, m := range sm.Metrics {
						c.metrics = append(c.metrics, m.Name)
					}
				}
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

func TestOTLPExport(t *testing.T) {
	col := &collector{}
	srv := httptest.NewServer(col)
	defer srv.Close()
	ctx := context.Background()
	_, err := OTLP(ctx, srv.URL+"/otlp", func(o *OTLPOptions) {
		o.Headers = map[string]string{"X-Collector-Key": "k1"}
	})
	require.Error(t, err, "headers are refused over plain HTTP without the opt-in")
	assert.NotContains(t, err.Error(), "k1")
	ps, err := OTLP(ctx, srv.URL+"/otlp", func(o *OTLPOptions) {
		o.Headers = map[string]string{"X-Collector-Key": "k1"}
		o.AllowInsecureHeaders = true // a loopback collector
		o.Interval = time.Hour        // only Shutdown exports
	})
	require.NoError(t, err)
	obs, err := New(Options{TracerProvider: ps.TracerProvider, MeterProvider: ps.MeterProvider})
	require.NoError(t, err)
	var done atomic.Int64
	require.NoError(t, benchLoad(ctx, obs, 3, &done))
	require.NoError(t, ps.Shutdown(ctx))

	col.mu.Lock()
	defer col.mu.Unlock()
	assert.Contains(t, col.paths, "/otlp/v1/traces")
	assert.Contains(t, col.paths, "/otlp/v1/metrics")
	for _, h := range col.headers {
		assert.Equal(t, "k1", h)
	}
	assert.Contains(t, col.spans, "chat llama-3-8b")
	assert.Contains(t, col.spans, AttemptSpanName)
	for _, m := range []string{MetricOperationDuration, MetricTokenUsage, MetricTimeToFirstChunk, MetricTimePerOutputChunk, MetricRetries, MetricThrottles} {
		assert.Contains(t, col.metrics, m)
	}
}

func TestParseOTLPEndpoint(t *testing.T) {
	for _, tc := range []struct {
		in             string
		host, base     string
		insecure, fail bool
	}{
		{in: "localhost:4318", host: "localhost:4318", insecure: true},
		{in: "http://127.0.0.1:4318", host: "127.0.0.1:4318", insecure: true},
		{in: "https://otlp.example.com/base/", host: "otlp.example.com", base: "/base"},
		{in: "", fail: true},
		{in: "collector", fail: true},
		{in: "grpc://x:4317", fail: true},
		{in: "http://", fail: true},
	} {
		host, base, insecure, err := parseOTLPEndpoint(tc.in)
		if tc.fail {
			assert.ErrorIs(t, err, errcodes.InvalidParam, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, []any{tc.host, tc.base, tc.insecure}, []any{host, base, insecure}, tc.in)
	}
}

func TestPrometheusShutdownTwice(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := ServePrometheus(ctx, "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, p.Shutdown(ctx))
	done := make(chan struct{})
	go func() {
		_ = p.Shutdown(ctx) // already stopped: may report it, must not block
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("a second Shutdown blocked")
	}
}

// TestOTLPHeaderVariablesNotSentInClear: the exporters' own header
// variables are held to the same rule as Options.Headers.
func TestOTLPHeaderVariablesNotSentInClear(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(&collector{})
	defer srv.Close()
	for _, v := range otlpHeaderVars {
		t.Run(v, func(t *testing.T) {
			t.Setenv(v, "authorization=Bearer topsecret")
			_, err := OTLP(ctx, srv.URL)
			require.Error(t, err)
			assert.Contains(t, err.Error(), v)
			assert.NotContains(t, err.Error(), "topsecret")
			ps, err := OTLP(ctx, srv.URL, func(o *OTLPOptions) { o.AllowInsecureHeaders = true })
			require.NoError(t, err, "the opt-in allows them")
			require.NoError(t, ps.Shutdown(ctx))
		})
	}
}

// TestOTLPHTTPSNotDowngradedByEnv: an https endpoint is exported over TLS
// whatever the OTEL_EXPORTER_OTLP_* variables say, so that its headers
// never go out in clear. The endpoint is a plain-HTTP server: a TLS
// exporter fails its handshake, a downgraded one reaches the handler.
func TestOTLPHTTPSNotDowngradedByEnv(t *testing.T) {
	const secret = "SECRET123"
	for _, tc := range []struct {
		name string
		env  func(plainURL string) map[string]string
	}{
		{"insecure", func(string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_INSECURE": "true"}
		}},
		{"per-signal-insecure", func(string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_TRACES_INSECURE": "true", "OTEL_EXPORTER_OTLP_METRICS_INSECURE": "true"}
		}},
		{"http-endpoint", func(u string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": u}
		}},
		{"per-signal-http-endpoints", func(u string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": u + "/v1/traces", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": u + "/v1/metrics"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var conns, inClear, withHeader atomic.Int64
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				inClear.Add(1)
				if r.Header.Get("X-Collector-Key") != "" {
					withHeader.Add(1)
				}
				w.WriteHeader(http.StatusOK)
			}))
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			defer srv.Close()
			for k, v := range tc.env(srv.URL) {
				t.Setenv(k, v)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			ps, err := OTLP(ctx, "https://"+srv.Listener.Addr().String()+"/otlp", func(o *OTLPOptions) {
				o.Headers = map[string]string{"X-Collector-Key": secret}
				o.Interval = time.Hour
				o.Timeout = 5 * time.Second
			})
			require.NoError(t, err)
			_, span := ps.TracerProvider.Tracer("test").Start(ctx, "s")
			span.End()
			cnt, err := ps.MeterProvider.Meter("test").Int64Counter("c")
			require.NoError(t, err)
			cnt.Add(ctx, 1)
			_ = ps.Shutdown(ctx) // fails: the server does not speak TLS
			assert.Positive(t, conns.Load(), "the exporters tried the endpoint")
			assert.Zero(t, withHeader.Load(), "the collector's header was sent over plain HTTP")
			assert.Zero(t, inClear.Load(), "an https endpoint was exported to over plain HTTP")
		})
	}
}

// TestProvidersShutdownConcurrent: a trace backend that never answers does
// not keep Shutdown from making the final metric export.
func TestProvidersShutdownConcurrent(t *testing.T) {
	release := make(chan struct{})
	metricSeen := make(chan struct{})
	var metricExports atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		switch {
		case strings.HasSuffix(r.URL.Path, "/v1/traces"):
			select { // a stuck trace backend
			case <-release:
			case <-r.Context().Done():
			}
		case strings.HasSuffix(r.URL.Path, "/v1/metrics"):
			if metricExports.Add(1) == 1 {
				close(metricSeen)
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	defer close(release)

	ps, err := OTLP(context.Background(), srv.URL, func(o *OTLPOptions) {
		o.Interval = time.Hour // only Shutdown exports
		o.Timeout = time.Minute
	})
	require.NoError(t, err)
	_, span := ps.TracerProvider.Tracer("test").Start(context.Background(), "s")
	span.End()
	cnt, err := ps.MeterProvider.Meter("test").Int64Counter("c")
	require.NoError(t, err)
	cnt.Add(context.Background(), 1)

	// The deadline stands for the caller's shutdown budget; it is cut short
	// once the metrics have arrived, so the test does not wait for it.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	go func() {
		select {
		case <-metricSeen:
			cancel()
		case <-ctx.Done():
		}
	}()
	err = ps.Shutdown(ctx)
	require.Error(t, err, "the trace export never completed")
	assert.EqualValues(t, 1, metricExports.Load(), "the final metric export reached the collector")
}

// TestProvidersShutdownNil: a Providers literal missing one provider (or
// both) shuts down the one it has, without crashing.
func TestProvidersShutdownNil(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    *Providers
	}{
		{"no tracer provider", &Providers{MeterProvider: sdkmetric.NewMeterProvider()}},
		{"no meter provider", &Providers{TracerProvider: sdktrace.NewTracerProvider()}},
		{"neither", &Providers{}},
		{"nil", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("Shutdown panicked: %v", r)
					}
				}()
				err = tc.p.Shutdown(context.Background())
			}()
			assert.NoError(t, err)
		})
	}
}
