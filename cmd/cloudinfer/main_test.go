package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
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
		{"invoke's own words", []string{"invoke", "--provider", "nope"}, exitFailed,
			[]string{`cloudinfer: error: ERR_INVALID_PARAM: invoke: provider "nope"`}},
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

// TestVersion: `cloudinfer version` prints one line naming the program,
// its module version and the Go version it was built with, and exits 0.
func TestVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"version"}, &out, &errOut), errOut.String())
	assert.Regexp(t, `^cloudinfer \S+( \([0-9a-f]{1,12}(, modified)?( \S+)?\))? go\S+\n$`, out.String())
	assert.Contains(t, out.String(), runtime.Version())
}
