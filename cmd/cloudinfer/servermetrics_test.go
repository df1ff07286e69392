package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/bench"
)

// TestBenchScrapesTheEmbeddedEmulator: a bench against the embedded
// emulator scrapes its /metrics by itself, joins its records, and prints
// where the time went; report and --compare read it back from the file.
func TestBenchScrapesTheEmbeddedEmulator(t *testing.T) {
	res, stdout, _, err := runBench(t, "--provider", "openai", "--model", "llama-3-8b", "--requests", "12", "--concurrency", "3",
		"--time-scale", "0.05", "--server-metrics-interval", "100ms")
	require.NoError(t, err)
	tr := res.Targets[0]
	require.NotNil(t, tr.Server)
	require.Len(t, tr.Server.Sources, 1)
	assert.Equal(t, "emulator", tr.Server.Sources[0].Server)
	require.NotEmpty(t, tr.Server.Exact)
	assert.Contains(t, stdout, "Where the time went")
	ds := tr.Decompose()
	require.Len(t, ds, 2)
	assert.Equal(t, "exact", ds[0].Method)

	c, err := bench.Compare(res, res, "a", "b")
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, c.Render(&b, bench.FormatText))
	assert.Contains(t, b.String(), "server queue mean (exact)")
	assert.Contains(t, b.String(), "network+client mean (exact)")
}

func TestBenchServerMetricsFlags(t *testing.T) {
	_, _, _, err := runBench(t, "--provider", "openai", "--model", "llama-3-8b", "--requests", "2", "--time-scale", "0.05", "--server-metrics", "localhost:9000/metrics")
	require.Error(t, err)
	var ue usageError
	assert.True(t, errors.As(err, &ue), "a usage error (exit 2): %v", err)
	assert.Contains(t, err.Error(), "--server-metrics")
	_, _, _, err = runBench(t, "--provider", "openai", "--model", "llama-3-8b", "--requests", "2", "--time-scale", "0.05", "--server-metrics-interval", "1ms")
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "at least 50ms"), err.Error())

	res, _, _, err := runBench(t, "--provider", "openai", "--model", "llama-3-8b", "--requests", "2", "--time-scale", "0.05", "--server-metrics", "off")
	require.NoError(t, err)
	assert.Nil(t, res.Targets[0].Server, "off: nothing scraped")
}

// TestEmulateOTLPFileJoinedByBench: `emulate --otlp-file` writes vLLM's
// per-request spans, and `bench --server-requests` against it joins them
// with its measured requests (the warm-up's are no measured request's).
func TestEmulateOTLPFileJoinedByBench(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	spans := filepath.Join(t.TempDir(), "spans.jsonl")
	var out lockedBuffer
	scale := 0.05
	cmd := &emulateCmd{Addr: "127.0.0.1:0", TimeScale: &scale, OTLPFile: spans}
	done := make(chan error, 1)
	go func() { done <- cmd.run(ctx, &out) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	var root string
	for deadline := time.Now().Add(10 * time.Second); root == "" && time.Now().Before(deadline); {
		if _, rest, ok := strings.Cut(out.String(), "ground truth: "); ok {
			root, _, _ = strings.Cut(rest, "/emulator/requests")
		}
		time.Sleep(5 * time.Millisecond)
	}
	require.NotEmpty(t, root, out.String())

	res, stdout, _, err := runBench(t, "--provider", "openai", "--url", root+"/v1", "--model", "llama-3-8b", "--requests", "6",
		"--warmup", "1", "--concurrency", "2", "--server-requests", spans, "--server-requests-wait", "2s")
	require.NoError(t, err)
	tr := res.Targets[0]
	require.NotNil(t, tr.Server)
	require.NotNil(t, tr.Server.SpanJoin)
	assert.Equal(t, bench.SpanJoin{File: spans, Spans: 7, Matched: 6, Others: 1}, *tr.Server.SpanJoin)
	var methods []string
	for _, d := range tr.Decompose() {
		methods = append(methods, d.Method)
	}
	assert.Contains(t, methods, bench.MethodSpans)
	assert.Contains(t, stdout, "exact (vLLM spans)")
}
