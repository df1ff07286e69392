package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/alecthomas/kong"
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

// writeResult saves a result of the given JSON text in dir and returns its
// path.
func writeResult(t *testing.T, dir, name, text string) string {
	t.Helper()
	r, err := bench.ParseResult([]byte(text))
	require.NoError(t, err)
	p := filepath.Join(dir, name)
	require.NoError(t, r.Save(p))
	return p
}

// TestReportErrorsNameTheFile: a file that cannot be read as a result is
// named in the error, and one that is JSON but no result is called that,
// not a result of format version 0.
func TestReportErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	good := writeResult(t, dir, "good.json", `{"version": 1, "begin": "2026-01-02T03:04:05Z"}`)
	corrupt := filepath.Join(dir, "corrupt.json")
	require.NoError(t, os.WriteFile(corrupt, []byte(`{"version": 1, "targets": [`), 0o644))
	other := filepath.Join(dir, "plan.json")
	require.NoError(t, os.WriteFile(other, []byte(`{"targets": [{"provider": "openai"}]}`), 0o644))

	err := parse(t, "report", "--merge", good, corrupt).Report.render(io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "corrupt.json")

	err = parse(t, "report", "--compare", good, other).Report.render(io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "plan.json")
	assert.Contains(t, err.Error(), "not a cloudinfer bench result")
	assert.NotContains(t, err.Error(), "version 0")
}

// TestReportMergeErrorNamesTheFiles: a refused merge says which files it
// was given, in the order its "results 1 and 2" count them.
func TestReportMergeErrorNamesTheFiles(t *testing.T) {
	dir := t.TempDir()
	a := writeResult(t, dir, "a.json", `{"version": 1, "begin": "2026-01-02T03:04:05Z"}`)
	b := writeResult(t, dir, "b.json", `{"version": 1, "begin": "2026-01-02T03:04:05Z"}`)
	err := parse(t, "report", "--merge", a, b).Report.render(io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), a+", "+b)
}

// TestReportUsageErrorsExit2: a command line of the wrong shape (the
// number of files, flags that do not go together) is a usage error, as a
// missing file argument is.
func TestReportUsageErrorsExit2(t *testing.T) {
	dir := t.TempDir()
	a := writeResult(t, dir, "a.json", `{"version": 1, "begin": "2026-01-02T03:04:05Z"}`)
	b := writeResult(t, dir, "b.json", `{"version": 1, "begin": "2026-01-02T04:04:05Z"}`)
	for _, args := range [][]string{
		{"report", a, b},
		{"report", "--compare", a},
		{"report", "--compare", a, b, a},
		{"report", "--compare", "--merge", a, b},
		{"report", "--compare", "--format", "json", a, b},
	} {
		var out, errOut bytes.Buffer
		got := run(args, &out, &errOut)
		assert.Equal(t, exitUsage, got, "%v: %s", args, errOut.String())
		assert.Contains(t, errOut.String(), "Usage: cloudinfer report", args)
		assert.Contains(t, errOut.String(), "cloudinfer: error: ", args)
	}
}

// TestReportCompareNamesUnpairedTargets: targets that only one of the two
// results holds are named, not dropped in silence.
func TestReportCompareNamesUnpairedTargets(t *testing.T) {
	dir := t.TempDir()
	a := writeResult(t, dir, "a.json", `{"version": 1, "targets": [{"name": "x"}, {"name": "y"}]}`)
	b := writeResult(t, dir, "b.json", `{"version": 1, "targets": [{"name": "x"}, {"name": "z"}]}`)
	c := parse(t, "report", "--compare", a, b)
	var out, notes bytes.Buffer
	c.Report.stderr = &notes
	require.NoError(t, c.Report.render(&out))
	assert.Contains(t, notes.String(), "only in a.json: y")
	assert.Contains(t, notes.String(), "only in b.json: z")

	// One target a side: those two are compared, nothing is left out.
	one := writeResult(t, dir, "one.json", `{"version": 1, "targets": [{"name": "q"}]}`)
	c = parse(t, "report", "--compare", one, writeResult(t, dir, "two.json", `{"version": 1, "targets": [{"name": "r"}]}`))
	notes.Reset()
	c.Report.stderr = &notes
	require.NoError(t, c.Report.render(&out))
	assert.Empty(t, notes.String())

	// Two files of one name, in two directories: the columns name them
	// apart.
	require.NoError(t, os.Mkdir(filepath.Join(dir, "run2"), 0o755))
	a2 := writeResult(t, dir, "run2/a.json", `{"version": 1, "targets": [{"name": "x"}, {"name": "y"}]}`)
	c = parse(t, "report", "--compare", a, a2)
	out.Reset()
	c.Report.stderr = io.Discard
	require.NoError(t, c.Report.render(&out))
	assert.Contains(t, out.String(), a+" (A) vs "+a2+" (B)")
}

// TestReportHelpSaysWhatCompareRenders: --format's help says that a
// comparison has no JSON form.
func TestReportHelpSaysWhatCompareRenders(t *testing.T) {
	var c cli
	var out bytes.Buffer
	p, err := kong.New(&c, kong.Name("cloudinfer"), kong.Writers(&out, &out), kong.Exit(func(int) {}))
	require.NoError(t, err)
	_, _ = p.Parse([]string{"report", "--help"})
	assert.Regexp(t, `json \(not\s+with\s+--compare\)`, out.String())
}

// TestReportCompareDetailIsAUsageError: a comparison has no per-group
// report to add, so --detail with --compare is refused as a usage error
// rather than ignored in silence.
func TestReportCompareDetailIsAUsageError(t *testing.T) {
	dir := t.TempDir()
	a := writeResult(t, dir, "a.json", `{"version": 1, "targets": [{"name": "x"}]}`)
	b := writeResult(t, dir, "b.json", `{"version": 1, "targets": [{"name": "x"}]}`)
	var out, errOut bytes.Buffer
	got := run([]string{"report", "--compare", "--detail", a, b}, &out, &errOut)
	assert.Equal(t, exitUsage, got, errOut.String())
	assert.Contains(t, errOut.String(), "Usage: cloudinfer report")
	assert.Contains(t, errOut.String(), "--detail")
	assert.Empty(t, out.String(), "nothing rendered")
}
