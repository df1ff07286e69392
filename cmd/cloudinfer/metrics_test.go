package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	colmetric "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// promMetrics are the GenAI metrics a bench run serves to Prometheus.
var promMetrics = []string{
	"gen_ai_client_operation_duration_seconds_bucket",
	"gen_ai_client_token_usage",
	"gen_ai_client_operation_time_to_first_chunk_seconds",
	"gen_ai_client_operation_time_per_output_chunk_seconds",
}

// scrapeDuring runs the parsed bench command c, which serves Prometheus on
// port 0, and scrapes it while the run goes until every metric of
// promMetrics is there; it returns the scrape once the run has ended
// without error.
func scrapeDuring(t *testing.T, c *cli) string {
	t.Helper()
	urls := make(chan string, 1)
	c.Bench.metricsAt = func(u string) { urls <- u }
	done := make(chan error, 1)
	go func() { done <- c.Bench.run(context.Background(), io.Discard, nil) }()
	var url string
	select {
	case url = <-urls:
	case err := <-done:
		t.Fatalf("the run ended (err %v) before serving metrics", err)
	case <-time.After(60 * time.Second):
		t.Fatal("no metrics listener within 60 s")
	}
	var body string
	found := false
	deadline := time.After(60 * time.Second)
	for !found {
		select {
		case err := <-done:
			t.Fatalf("the run ended (err %v) before its metrics were scraped; last scrape:\n%.2000s", err, body)
		case <-deadline:
			t.Fatal("no metrics within 60 s")
		case <-time.After(50 * time.Millisecond):
		}
		res, err := http.Get(url)
		if err != nil {
			continue // not listening yet
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		body = string(b)
		found = true
		for _, m := range promMetrics {
			found = found && strings.Contains(body, m)
		}
	}
	require.NoError(t, <-done)
	return body
}

// TestBenchServesPrometheusDuringTheRun scrapes `cloudinfer bench
// --metrics-addr` while the run goes, and finds the GenAI metrics there.
func TestBenchServesPrometheusDuringTheRun(t *testing.T) {
	c := parse(t, "bench", "--time-scale", "0.05", "--requests", "40", "--quiet",
		"--metrics-addr", "127.0.0.1:0", "--out", filepath.Join(t.TempDir(), "r.json"))
	body := scrapeDuring(t, c)
	assert.Contains(t, body, `gen_ai_provider_name="openai"`)
}

// TestBenchExportsOTLPBesidePrometheus runs `cloudinfer bench` with both
// --metrics-addr and --otlp: Prometheus serves the run's metrics during
// the run, and the OTLP endpoint gets them as well as its spans.
func TestBenchExportsOTLPBesidePrometheus(t *testing.T) {
	var mu sync.Mutex
	metrics := map[string]bool{}
	spans := 0
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/v1/metrics":
			var req colmetric.ExportMetricsServiceRequest
			if proto.Unmarshal(b, &req) == nil {
				for _, rm := range req.ResourceMetrics {
					for _, sm := range rm.ScopeMetrics {
						for _, m := range sm.Metrics {
							metrics[m.Name] = true
						}
					}
				}
			}
		case "/v1/traces":
			var req coltrace.ExportTraceServiceRequest
			if proto.Unmarshal(b, &req) == nil {
				for _, rs := range req.ResourceSpans {
					for _, ss := range rs.ScopeSpans {
						spans += len(ss.Spans)
					}
				}
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer recv.Close()
	c := parse(t, "bench", "--time-scale", "0.05", "--requests", "40", "--quiet",
		"--metrics-addr", "127.0.0.1:0", "--otlp", recv.URL, "--out", filepath.Join(t.TempDir(), "r.json"))
	scrapeDuring(t, c) // Prometheus gets the metrics too
	mu.Lock()
	defer mu.Unlock()
	assert.True(t, metrics["gen_ai.client.operation.duration"], "OTLP metrics: %v", metrics)
	assert.Positive(t, spans)
}
