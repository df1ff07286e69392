package bench

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/latency"
)

// withSLAs returns synthetic's result with its recorder counting goodput
// against the given SLAs instead of the default ttft p95 150ms.
func withSLAs(t *testing.T, name string, base int, slas ...latency.SLA) *Result {
	t.Helper()
	r := synthetic(t, name, base, 0, 100, 0)
	tr := r.Targets[0]
	rec, err := latency.NewRecorder(latency.RecorderOptions{SLAs: slas})
	require.NoError(t, err)
	// Re-record the same requests against the new SLAs.
	for i := range 100 {
		ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
		ttft, tpot := ms(float64(base+i)), ms(10+float64(i)/10)
		s := latency.Sample{Endpoint: name, Start: latency.Warm, Streamed: true, OutputTokens: 51, TokenSource: latency.TokensFromServer,
			TTFT: ttft, TPOT: tpot, E2E: ttft + 50*tpot, Attempts: 1}
		s.Has = s.Has.With(latency.TTFT).With(latency.TPOT).With(latency.E2E).With(latency.OutputTokens)
		rec.Add(&s)
	}
	tr.Recorder = rec
	r.Plan.SLAs = slas
	return r
}

func row(t *testing.T, c *Comparison, fig string) CompareRow {
	t.Helper()
	for _, r := range c.Rows {
		if r.Figure == fig {
			return r
		}
	}
	t.Fatalf("no %s", fig)
	return CompareRow{}
}

// TestCompareGoodputOnlyAgainstTheSameSLAs: goodput counts the requests
// that met the run's SLAs, so two runs' goodputs subtract only when they
// were counted against the same SLAs. Against different ones the rows
// show both values but no delta.
func TestCompareGoodputOnlyAgainstTheSameSLAs(t *testing.T) {
	strict := latency.SLA{Metric: latency.TTFT, Percentile: 95, Threshold: int64(150 * time.Millisecond), Starts: latency.StartsAll}
	loose := strict
	loose.Threshold = int64(time.Second)
	// The same requests: TTFT 100..199 ms.
	a, b := withSLAs(t, "m1", 100, strict), withSLAs(t, "m1", 100, loose)
	c, err := Compare(a, b, "a", "b")
	require.NoError(t, err)
	g := row(t, c, "goodput")
	assert.True(t, g.HasA && g.HasB)
	assert.Less(t, g.A, g.B, "the same requests meet the looser SLA more often")
	assert.NotEmpty(t, g.Incomparable)
	var buf bytes.Buffer
	require.NoError(t, c.Render(&buf, FormatText))
	for _, line := range bytes.Split(buf.Bytes(), []byte("\n")) {
		if bytes.Contains(line, []byte("goodput")) {
			assert.NotContains(t, string(line), "%", "no Δ%% between goodputs of different SLAs: %s", line)
			assert.Contains(t, string(line), "SLAs differ")
		}
	}
	// The rest of the figures still compare.
	assert.Empty(t, row(t, c, "TTFT mean").Incomparable)

	// The same SLAs, given per target or for every target, compare.
	perTarget := strict
	perTarget.Endpoint = "m1"
	c, err = Compare(a, withSLAs(t, "m1", 100, perTarget), "a", "b")
	require.NoError(t, err)
	g = row(t, c, "goodput")
	assert.Empty(t, g.Incomparable)
	assert.Equal(t, g.A, g.B)
}
