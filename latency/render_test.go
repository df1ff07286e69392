package latency

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
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestMeanSDReferenceStyle(t *testing.T) {
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
		assert.Equal(t, tc.want, MeanSD(tc.mean, tc.sd))
	}
}

// referenceRecorder records the seed's LLaMA-3-8B profile (TTFT 428 ± 31
// ms, TPOT 28.4 ± 2.1 ms, 50 tokens), a few cold starts and errors, from a
// fixed seed.
func referenceRecorder(t testing.TB) *Recorder {
	r := mustRecorder(t,
		SLA{Metric: TTFT, Percentile: 95, Threshold: int64(480 * time.Millisecond), Starts: StartsAll},
		SLA{Metric: TTFT, Percentile: 95, Threshold: int64(450 * time.Millisecond), Starts: StartsWarm},
		SLA{Name: "cold-start", Metric: ColdStart, Percentile: 50, Threshold: int64(1200 * time.Millisecond), Starts: StartsCold},
	)
	rng := rand.New(rand.NewPCG(42, 42))
	for i := range 100 {
		ttft := 428 + 31*rng.NormFloat64()
		chunks := []Chunk{empty(ttft * 0.9), content(ttft, 1)}
		at := ttft
		for range 49 {
			at += math.Max(28.4+2.1*rng.NormFloat64(), 1)
			chunks = append(chunks, content(at, 1))
		}
		chunks = append(chunks, empty(at+1))
		tl := stream(chunks...)
		o := Outcome{Endpoint: "openai/openai-compatible/llama-3-8b", Class: "chat", Start: Start{Kind: Warm, Reason: ReasonNoEvidence}, OutputTokens: 50}
		switch {
		case i%25 == 0:
			o.Start = Start{Kind: Cold, Reason: ReasonServerReported, Overhead: 2800 * time.Millisecond}
			tl.ModelReady = tl.Send()
			for j := range tl.Chunks {
				tl.Chunks[j].At = tl.Chunks[j].At.Add(2800 * time.Millisecond)
			}
			tl.ModelReady = tl.Send().Add(2800 * time.Millisecond)
		case i%33 == 1:
			o.Err = "ERR_THROTTLED"
		}
		s := Measure(tl, o)
		r.Add(&s)
	}
	r.SetWindow(t0, t0.Add(20*time.Second))
	return r
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./latency -run %s -update to create it", t.Name())
	assert.Equal(t, string(want), string(got))
}

func TestRenderGolden(t *testing.T) {
	rep := referenceRecorder(t).Report(ReportOptions{Metrics: []Metric{TTFT, TPOT, ITL, E2E, TTFTIntended, ColdStart, OutputTokens}})
	for _, f := range []struct {
		format Format
		file   string
	}{{FormatText, "report.txt"}, {FormatMarkdown, "report.md"}, {FormatCSV, "report.csv"}, {FormatJSON, "report.json"}} {
		t.Run(string(f.format), func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, rep.Render(&b, f.format))
			golden(t, f.file, b.Bytes())
		})
	}
}

func TestRenderedValuesAgreeWithTheReport(t *testing.T) {
	rep := referenceRecorder(t).Report(ReportOptions{})
	g := rep.Group(GroupKey{Endpoint: "openai/openai-compatible/llama-3-8b", Class: "chat", Start: Warm})
	require.NotNil(t, g)
	ttft := g.Metric(TTFT)
	require.NotNil(t, ttft)
	// The seed profile comes back: 428 ± 31 ms within sampling noise.
	assert.InDelta(t, 428, ttft.Mean, 10)
	assert.InDelta(t, 31, ttft.SD, 8)
	assert.InDelta(t, 28.4, g.Metric(TPOT).Mean, 0.5)

	var txt bytes.Buffer
	require.NoError(t, rep.Render(&txt, FormatText))
	assert.Contains(t, txt.String(), MeanSD(ttft.Mean, ttft.SD))

	var js bytes.Buffer
	require.NoError(t, rep.Render(&js, FormatJSON))
	var back Report
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	assert.Equal(t, ttft.Mean, back.Group(g.GroupKey).Metric(TTFT).Mean)

	var c bytes.Buffer
	require.NoError(t, rep.Render(&c, FormatCSV))
	rows, err := csv.NewReader(&c).ReadAll()
	require.NoError(t, err)
	found := false
	for _, row := range rows {
		if row[0] == "metric" && row[3] == "warm" && row[4] == "ttft" && row[5] == "mean" {
			found = true
			assert.Equal(t, "ms", row[7])
			assert.True(t, strings.HasPrefix(row[6], strings.Split(MeanSD(ttft.Mean, ttft.SD), " ")[0]))
		}
	}
	assert.True(t, found)

	assert.Error(t, rep.Render(&c, "yaml"))
	assert.Error(t, rep.Render(failWriter{}, FormatText))
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestRenderWithoutColdNeedsWarmValues: when every value an all-starts SLA
// covers is cold, there is no value without them: the renderings say so
// instead of printing 0.
func TestRenderWithoutColdNeedsWarmValues(t *testing.T) {
	r := mustRecorder(t, SLA{Metric: TTFT, Percentile: 95, Threshold: int64(150 * time.Millisecond), Starts: StartsAll})
	for range 3 {
		s := Measure(stream(content(2000, 1)), Outcome{Endpoint: "e", Start: Start{Kind: Cold, Reason: ReasonIdleGap}})
		r.Add(&s)
	}
	rep := r.Report(ReportOptions{})
	require.Len(t, rep.SLAs, 1)
	cells := slaCells(&rep.SLAs[0])
	assert.Equal(t, "FAIL", cells[5])
	assert.Equal(t, "-", cells[6], "without cold")
	assert.Equal(t, "100%", cells[7], "cold share")

	var c bytes.Buffer
	require.NoError(t, rep.Render(&c, FormatCSV))
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
func TestRenderStartLabel(t *testing.T) {
	r := mustRecorder(t)
	ok := Measure(stream(content(2000, 1)), Outcome{Endpoint: "ok"})
	r.Add(&ok)
	bad := Sample{Endpoint: "bad", Err: "ERR_THROTTLED"}
	r.Add(&bad)
	rep := r.Report(ReportOptions{})
	var text, c bytes.Buffer
	require.NoError(t, rep.Render(&text, FormatText))
	assert.Contains(t, text.String(), "ok start=unclassified")
	assert.Contains(t, text.String(), "bad start=failed")
	require.NoError(t, rep.Render(&c, FormatCSV))
	rows, err := csv.NewReader(&c).ReadAll()
	require.NoError(t, err)
	starts := map[string]string{}
	for _, row := range rows[1:] {
		starts[row[1]] = row[3]
	}
	assert.Equal(t, map[string]string{"ok": "unclassified", "bad": "failed"}, starts)
}
