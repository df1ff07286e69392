package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExitStatuses: a usage error exits 2 with the command's short usage
// and the error, not the whole help; a command that fails exits 1.
func TestExitStatuses(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	for _, f := range []string{a, b} {
		require.NoError(t, os.WriteFile(f, []byte("{}"), 0o644))
	}
	for _, tc := range []struct {
		name string
		args []string
		want int
		says []string
	}{
		{"bad duration", []string{"bench", "--duration", "5"}, exitUsage,
			[]string{"Usage: cloudinfer bench", `missing unit in duration "5"`}},
		{"no command", nil, exitUsage, []string{`expected one of "bench"`}},
		{"unknown flag", []string{"report", "--bogus", "x.json"}, exitUsage, []string{"unknown flag --bogus"}},
		{"failed command", []string{"report", "--compare", a, b}, exitFailed,
			[]string{"cloudinfer: error:", "a.json is not a cloudinfer bench result"}},
		{"flags that do not go together", []string{"report", "--compare", "--merge", a, b}, exitUsage,
			[]string{"Usage: cloudinfer report", "--compare or --merge, not both"}},
		{"unknown provider", []string{"invoke", "--provider", "nope"}, exitUsage,
			[]string{"Usage: cloudinfer invoke", `cloudinfer: error: ERR_INVALID_PARAM: --provider "nope": want aws, azure, gcp, alibaba or openai`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			got := run(tc.args, &out, &errOut)
			assert.Equal(t, tc.want, got, errOut.String())
			for _, s := range tc.says {
				assert.Contains(t, errOut.String(), s)
			}
			assert.NotContains(t, errOut.String(), "--ladder-high-water", "the whole help was printed")
			assert.Empty(t, out.String())
		})
	}
}

// TestUnknownValuesAreUsageErrors: a flag value that names nothing the
// command knows (a provider, a load model, a format, a metric, an action)
// or does not parse (an SLA, a gate, a network impairment, a negative
// number) is a usage error, exit 2 with the command's short usage, found
// before anything starts.
func TestUnknownValuesAreUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"invoke", "--provider", "foo"}, `--provider "foo"`},
		{[]string{"invoke", "--provider", "gcp", "--url", "http://127.0.0.1:1"}, "--grpc-addr"},
		{[]string{"invoke", "--network", "delay=soon"}, `delay "soon"`},
		{[]string{"invoke", "--retries=-1"}, "--retries must not be negative"},
		{[]string{"invoke", "--prompt", " "}, "--prompt is empty"},
		{[]string{"invoke", "--endpoint", "http://127.0.0.1:1/v1"}, "--model"},
		{[]string{"bench", "--provider", "foo"}, `--provider "foo"`},
		{[]string{"bench", "--load", "foo"}, "--load must be one of"},
		{[]string{"bench", "--format", "yaml"}, "--format must be one of"},
		{[]string{"bench", "--action", "chat"}, "--action must be one of"},
		{[]string{"bench", "--ladder-metric", "tpot"}, "--ladder-metric must be one of"},
		{[]string{"bench", "--sla", "ttft fast"}, `SLA "ttft fast"`},
		{[]string{"bench", "--fail-on", "slow"}, `gate "slow"`},
		{[]string{"bench", "--fail-on", "errors>lots"}, `gate "errors>lots"`},
		{[]string{"bench", "--network", "loss=lots"}, "--network"},
		{[]string{"bench", "--requests=-5"}, "--requests must not be negative"},
		{[]string{"bench", "--provider", "gcp", "--url", "http://127.0.0.1:1"}, "--grpc-addr"},
		{[]string{"report", "--format", "pdf", "main_test.go"}, "--format must be one of"},
		{[]string{"emulate", "--time-scale=-1"}, "--time-scale"},
		{[]string{"emulate", "--time-scale=NaN"}, "--time-scale"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			got := run(tc.args, &out, &errOut)
			assert.Equal(t, exitUsage, got, errOut.String())
			assert.Contains(t, errOut.String(), "Usage: cloudinfer "+tc.args[0])
			assert.Contains(t, errOut.String(), tc.says)
			assert.NotContains(t, errOut.String(), "embedded emulator", "refused before anything starts")
			assert.Empty(t, out.String())
		})
	}
}

// TestVersion: `cloudinfer version` prints one line naming the program,
// its module version and the Go version it was built with, and exits 0.
func TestVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"version"}, &out, &errOut), errOut.String())
	assert.Regexp(t, `^cloudinfer \S+( \([0-9a-f]{1,12}(, modified)?( \S+)?\))? go\S+\n$`, out.String())
	assert.Contains(t, out.String(), runtime.Version())
}
