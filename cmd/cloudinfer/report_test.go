package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/bench"
)

// TestReportOutWrittenOnlyOnSuccess: --out is written only once the
// output is rendered, so that a failed report leaves no empty file behind
// and a report written over one of its own inputs does not destroy it.
func TestReportOutWrittenOnlyOnSuccess(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte("not json"), 0o644))
	out := filepath.Join(dir, "out.html")
	require.Error(t, parse(t, "report", bad, "--format", "html", "--out", out).Report.Run())
	assert.NoFileExists(t, out, "a failed report leaves no file")

	src, err := bench.ParseResult([]byte(`{"version": 1, "begin": "2026-01-02T03:04:05Z"}`))
	require.NoError(t, err)
	in := filepath.Join(dir, "in.json")
	require.NoError(t, src.Save(in))
	require.NoError(t, parse(t, "report", in, "--format", "json", "--out", in).Report.Run())
	got, err := bench.ReadResult(in)
	require.NoError(t, err, "the input, rewritten in place, is still a result")
	assert.Equal(t, src.Begin, got.Begin)
}
