package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// freeAddr returns a loopback address no one listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// TestBenchServesPrometheusDuringTheRun scrapes `cloudinfer bench
// --metrics-addr` while the run goes, and finds the GenAI metrics there.
func TestBenchServesPrometheusDuringTheRun(t *testing.T) {
	addr := freeAddr(t)
	c := parse(t, "bench", "--time-scale", "0.05", "--requests", "40", "--quiet",
		"--metrics-addr", addr, "--out", filepath.Join(t.TempDir(), "r.json"))
	done := make(chan error, 1)
	go func() { done <- c.Bench.run(context.Background(), io.Discard, nil) }()

	want := []string{
		"gen_ai_client_operation_duration_seconds_bucket",
		"gen_ai_client_token_usage",
		"gen_ai_client_operation_time_to_first_chunk_seconds",
		"gen_ai_client_operation_time_per_output_chunk_seconds",
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
		res, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			continue // not listening yet
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		body = string(b)
		found = true
		for _, m := range want {
			found = found && strings.Contains(body, m)
		}
	}
	assert.Contains(t, body, `gen_ai_provider_name="openai"`)
	require.NoError(t, <-done)
}
