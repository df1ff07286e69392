package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/latency/stats"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestFmtMeanSDReferenceStyle(t *testing.T) {
	for _, tc := range []struct {
		mean, sd float64
		want     string
	}{
		{428.2, 31.4, "428 ± 31"},
		{28.43, 2.08, "28.4 ± 2.1"},
		{1912, 147.2, "1912 ± 147"},
		{12.7, 1.3, "12.7 ± 1.3"},
		{0.853, 0.1, "0.85 ± 0.10"},
		{0.0321, 0.004, "0.032 ± 0.004"},
		{0, 0, "0 ± 0"},
	} {
		assert.Equal(t, tc.want, fmtMeanSD(tc.mean, tc.sd))
	}
}

// reportT0 is the hand-built timelines' origin.
var reportT0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func reportAt(ms float64) time.Time {
	return reportT0.Add(time.Duration(ms * float64(time.Millisecond)))
}

// reportStream builds a streamed timeline: one attempt sent at 0 on a
// reused connection, request written at 1 ms, first byte at 50 ms, and the
// given chunks; the call started and was intended at 0, and ended after
// the last chunk.
func reportStream(chunks ...latency.Chunk) *latency.Timeline {
	tl := &latency.Timeline{IntendedSend: reportAt(0), Start: reportAt(0), Streamed: true, Chunks: chunks}
	end := reportAt(0)
	for _, c := range chunks {
		end = c.At
	}
	tl.End = end.Add(time.Millisecond)
	tl.Attempts = []latency.Attempt{{Number: 1, Send: reportAt(0), GotConn: reportAt(0), ConnReused: true, WroteRequest: reportAt(1), FirstByte: reportAt(50), End: tl.End, Status: 200}}
	return tl
}

func reportContent(msAt float64, tokens int) latency.Chunk {
	return latency.Chunk{At: reportAt(msAt), Tokens: tokens, Content: true}
}

func reportEmpty(msAt float64) latency.Chunk { return latency.Chunk{At: reportAt(msAt)} }

func reportRecorder(t testing.TB, slas ...stats.SLA) *stats.Recorder {
	t.Helper()
	r, err := stats.NewRecorder(stats.RecorderOptions{SLAs: slas})
	require.NoError(t, err)
	return r
}

// referenceRecorder records the seed's LLaMA-3-8B profile (TTFT 428 ± 31
// ms, TPOT 28.4 ± 2.1 ms, 50 tokens), a few cold starts and errors, from a
// fixed seed.
func referenceRecorder(t testing.TB) *stats.Recorder {
	r := reportRecorder(t,
		stats.SLA{Metric: latency.TTFT, Percentile: 95, Threshold: int64(480 * time.Millisecond), Starts: stats.StartsAll},
		stats.SLA{Metric: latency.TTFT, Percentile: 95, Threshold: int64(450 * time.Millisecond), Starts: stats.StartsWarm},
		stats.SLA{Name: "cold-start", Metric: latency.ColdStart, Percentile: 50, Threshold: int64(1200 * time.Millisecond), Starts: stats.StartsCold},
	)
	rng := rand.New(rand.NewPCG(42, 42))
	for i := range 100 {
		ttft := 428 + 31*rng.NormFloat64()
		chunks := []latency.Chunk{reportEmpty(ttft * 0.9), reportContent(ttft, 1)}
		at := ttft
		for range 49 {
			at += math.Max(28.4+2.1*rng.NormFloat64(), 1)
			chunks = append(chunks, reportContent(at, 1))
		}
		chunks = append(chunks, reportEmpty(at+1))
		tl := reportStream(chunks...)
		o := latency.Outcome{Endpoint: "openai/openai-compatible/llama-3-8b", Class: "chat", Start: latency.Start{Kind: latency.Warm, Reason: latency.ReasonNoEvidence}, OutputTokens: 50}
		switch {
		case i%25 == 0:
			o.Start = latency.Start{Kind: latency.Cold, Reason: latency.ReasonServerReported, Overhead: 2800 * time.Millisecond}
			tl.ModelReady = tl.Send()
			for j := range tl.Chunks {
				tl.Chunks[j].At = tl.Chunks[j].At.Add(2800 * time.Millisecond)
			}
			tl.ModelReady = tl.Send().Add(2800 * time.Millisecond)
		case i%33 == 1:
			o.Err = "ERR_THROTTLED"
		}
		s := latency.Measure(tl, o)
		r.Add(&s)
	}
	r.SetWindow(reportT0, reportT0.Add(20*time.Second))
	return r
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./bench -run %s -update to create it", t.Name())
	assert.Equal(t, string(want), string(got))
}

func TestRenderReportGolden(t *testing.T) {
	rep := referenceRecorder(t).Report(stats.ReportOptions{Metrics: []latency.Metric{latency.TTFT, latency.TPOT, latency.ITL, latency.E2E, latency.TTFTIntended, latency.ColdStart, latency.OutputTokens}})
	for _, f := range []struct {
		format Format
		file   string
	}{{FormatText, "report.txt"}, {FormatMarkdown, "report.md"}, {FormatCSV, "report.csv"}, {FormatJSON, "report.json"}} {
		t.Run(string(f.format), func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, RenderReport(&b, rep, f.format))
			golden(t, f.file, b.Bytes())
		})
	}
}

func TestRenderedReportAgreesWithTheReport(t *testing.T) {
	rep := referenceRecorder(t).Report(stats.ReportOptions{})
	g := rep.Group(stats.GroupKey{Endpoint: "openai/openai-compatible/llama-3-8b", Class: "chat", Start: latency.Warm})
	require.NotNil(t, g)
	ttft := g.Metric(latency.TTFT)
	require.NotNil(t, ttft)
	// The seed profile comes back: 428 ± 31 ms within sampling noise.
	assert.InDelta(t, 428, ttft.Mean, 10)
	assert.InDelta(t, 31, ttft.SD, 8)
	assert.InDelta(t, 28.4, g.Metric(latency.TPOT).Mean, 0.5)

	var txt bytes.Buffer
	require.NoError(t, RenderReport(&txt, rep, FormatText))
	assert.Contains(t, txt.String(), fmtMeanSD(ttft.Mean, ttft.SD))

	var js bytes.Buffer
	require.NoError(t, RenderReport(&js, rep, FormatJSON))
	var back stats.Report
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	assert.Equal(t, ttft.Mean, back.Group(g.GroupKey).Metric(latency.TTFT).Mean)

	var c bytes.Buffer
	require.NoError(t, RenderReport(&c, rep, FormatCSV))
	rows, err := csv.NewReader(&c).ReadAll()
	require.NoError(t, err)
	found := false
	for _, row := range rows {
		if row[0] == "metric" && row[3] == "warm" && row[4] == "ttft" && row[5] == "mean" {
			found = true
			assert.Equal(t, "ms", row[7])
			assert.True(t, strings.HasPrefix(row[6], strings.Split(fmtMeanSD(ttft.Mean, ttft.SD), " ")[0]))
		}
	}
	assert.True(t, found)

	assert.Error(t, RenderReport(&c, rep, "yaml"))
	assert.Error(t, RenderReport(failWriter{}, rep, FormatText))
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestRenderWithoutColdNeedsWarmValues: when every value an all-starts SLA
// covers is cold, there is no value without them: the renderings say so
// instead of printing 0.
func TestRenderReportWithoutColdNeedsWarmValues(t *testing.T) {
	r := reportRecorder(t, stats.SLA{Metric: latency.TTFT, Percentile: 95, Threshold: int64(150 * time.Millisecond), Starts: stats.StartsAll})
	for range 3 {
		s := latency.Measure(reportStream(reportContent(2000, 1)), latency.Outcome{Endpoint: "e", Start: latency.Start{Kind: latency.Cold, Reason: latency.ReasonIdleGap}})
		r.Add(&s)
	}
	rep := r.Report(stats.ReportOptions{})
	require.Len(t, rep.SLAs, 1)
	cells := slaCells(&rep.SLAs[0], rep.SLAs[0].SLA.Label())
	assert.Equal(t, "FAIL", cells[5])
	assert.Equal(t, "-", cells[6], "without cold")
	assert.Equal(t, "100%", cells[7], "cold share")

	var c bytes.Buffer
	require.NoError(t, RenderReport(&c, rep, FormatCSV))
	rows, err := csv.NewReader(&c).ReadAll()
	require.NoError(t, err)
	for _, row := range rows {
		if row[0] == "sla" {
			assert.NotEqual(t, "without_cold", row[5], "no value without the cold requests")
		}
	}
}

// TestRenderStartLabel: a group without a start kind is "failed" when all
// of it failed, and "unclassified" when it holds successes recorded
// without a verdict.
func TestRenderReportStartLabel(t *testing.T) {
	r := reportRecorder(t)
	ok := latency.Measure(reportStream(reportContent(2000, 1)), latency.Outcome{Endpoint: "ok"})
	r.Add(&ok)
	bad := latency.Sample{Endpoint: "bad", Err: "ERR_THROTTLED"}
	r.Add(&bad)
	rep := r.Report(stats.ReportOptions{})
	var text, c bytes.Buffer
	require.NoError(t, RenderReport(&text, rep, FormatText))
	assert.Contains(t, text.String(), "ok start=unclassified")
	assert.Contains(t, text.String(), "bad start=failed")
	require.NoError(t, RenderReport(&c, rep, FormatCSV))
	rows, err := csv.NewReader(&c).ReadAll()
	require.NoError(t, err)
	starts := map[string]string{}
	for _, row := range rows[1:] {
		starts[row[1]] = row[3]
	}
	assert.Equal(t, map[string]string{"ok": "unclassified", "bad": "failed"}, starts)
}
