package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

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
