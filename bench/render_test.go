package bench

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/latency/stats"
)

// synthetic returns a result of one streamed target whose requests have
// TTFT = base + i ms, TPOT = 10 + i/10 ms and E2E = TTFT + 50 × TPOT, for
// i in [from, to), request i sent i seconds after 03:04:05 and the run
// begun with the first; every tenth request is cold, and failed adds that
// many ERR_THROTTLED failures.
func synthetic(t *testing.T, name string, base, from, to, failed int) *Result {
	t.Helper()
	return syntheticFrom(t, name, base, from, to, failed, time.Duration(from)*time.Second)
}

// syntheticFrom is synthetic with the run begun at begin after 03:04:05.
func syntheticFrom(t *testing.T, name string, base, from, to, failed int, begin time.Duration) *Result {
	t.Helper()
	p := &Plan{Targets: []Target{{Name: name, Provider: "openai", Model: name, Stream: true}}, Limits: Limits{Requests: to - from},
		SLAs: []stats.SLA{{Metric: latency.TTFT, Percentile: 95, Threshold: int64(150 * time.Millisecond)}}}
	require.NoError(t, p.Prepare())
	col, err := newCollector(p, &p.Targets[0])
	require.NoError(t, err)
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	col.begin(start.Add(begin))
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	for i := from; i < to; i++ {
		ttft, tpot := ms(float64(base+i)), ms(10+float64(i)/10)
		s := latency.Sample{Endpoint: name, Start: latency.Warm, Streamed: true, OutputTokens: 51, TokenSource: latency.TokensFromServer,
			TTFT: ttft, TPOT: tpot, E2E: ttft + 50*tpot, ScheduleLag: ms(0.01),
			Begin: start.Add(time.Duration(i) * time.Second), Attempts: 1}
		s.End = s.Begin.Add(s.E2E)
		s.Has = s.Has.With(latency.TTFT).With(latency.TPOT).With(latency.E2E).With(latency.ScheduleLag).With(latency.OutputTokens)
		if i%10 == 0 {
			s.Start = latency.Cold
			s.ColdStart = ms(2800)
			s.Has = s.Has.With(latency.ColdStart)
		}
		col.sent.Add(1)
		col.add(&s, map[string]string{"device": []string{"mobile", "desktop"}[i%2]}, s.Begin)
	}
	for range failed {
		s := latency.Sample{Endpoint: name, Err: "ERR_THROTTLED", Begin: start, End: start}
		col.sent.Add(1)
		col.add(&s, nil, time.Time{})
	}
	r := newResult(p)
	r.Begin = start
	tr := col.result()
	tr.CPU = 0.05
	r.Targets = append(r.Targets, tr)
	return r
}

func TestReferenceTable(t *testing.T) {
	r := synthetic(t, "m1", 100, 0, 100, 0)
	var b bytes.Buffer
	r.ReferenceTable(&b, false)
	out := b.String()
	t.Log("\n" + out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2)
	assert.Equal(t, []string{"target", "n", "failed", "TTFT", "ms", "TPOT", "ms/token", "total", "ms"}, strings.Fields(lines[0])[:9])
	f := strings.Fields(lines[1])
	// TTFT 100..199 ms: mean 149.5, sd 29.0; TPOT 10..19.9: mean 14.95 ms.
	assert.Equal(t, []string{"m1", "100", "0", "150", "±", "29"}, f[:6])
	assert.Equal(t, []string{"14.9", "±", "2.9"}, f[6:9])
}

func TestRenderFormats(t *testing.T) {
	r := synthetic(t, "m1", 100, 0, 100, 5)
	r.Targets[0].Ladder = &LadderTrace{Config: Ladder{}.WithDefaults(), Steps: []LadderStep{
		{Index: 0, Rate: 10, Sent: 100, Completed: 100, P95: Duration(50 * time.Millisecond), P95Known: true, Action: Climb, Next: 60},
		{Index: 1, Start: Duration(10 * time.Second), Rate: 60, Sent: 600, Completed: 590, P95: Duration(250 * time.Millisecond), P95Known: true, Action: BackOff, Next: 42},
	}}
	for _, f := range Formats {
		t.Run(string(f), func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, r.Render(&b, f, RenderOptions{Detail: true}))
			out := b.String()
			switch f {
			case FormatText, FormatMarkdown:
				for _, want := range []string{"Load and generator", "Errors by code", "ERR_THROTTLED", "Cold and warm starts",
					"SLAs", "ttft p95 150ms", "QPS ladder: m1 (highest rate held with p95 e2e ≤ 200ms: 10.0 req/s; latency from the intended send)", "back-off", "Tags", "mobile"} {
					assert.Contains(t, out, want)
				}
			case FormatCSV:
				rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
				require.NoError(t, err)
				var load, ladder int
				for _, row := range rows {
					require.Len(t, row, 8)
					load += map[bool]int{true: 1}[row[0] == "load"]
					ladder += map[bool]int{true: 1}[row[0] == "ladder"]
				}
				assert.Positive(t, load)
				assert.Positive(t, ladder)
			case FormatJSON:
				back, err := ParseResult(b.Bytes())
				require.NoError(t, err)
				assert.Equal(t, r.Targets[0].Counts(), back.Targets[0].Counts())
			case FormatHTML:
				assert.Equal(t, 8, strings.Count(out, "<svg"), "latency, throughput, ladder rate and p95, TTFT, TPOT, cold/warm, errors")
				assert.NotContains(t, out, "<script")
				assert.NotContains(t, out, "src=")
				assert.NotContains(t, strings.ReplaceAll(out, `xmlns="http://www.w3.org/2000/svg"`, ""), "http")
				assert.Contains(t, out, "150 ± 29")
			}
		})
	}
	var b bytes.Buffer
	assert.Error(t, r.Render(&b, "pdf", RenderOptions{}))
}

func TestSaveReadMergeIsExact(t *testing.T) {
	dir := t.TempDir()
	a, b := synthetic(t, "m1", 100, 0, 50, 2), synthetic(t, "m1", 100, 50, 100, 3)
	b.Hosts = []Host{{Name: "second-machine", CPUs: 2}}
	whole := synthetic(t, "m1", 100, 0, 100, 5)
	pa, pb := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	require.NoError(t, a.Save(pa))
	require.NoError(t, b.Save(pb))
	ra, err := ReadResult(pa)
	require.NoError(t, err)
	rb, err := ReadResult(pb)
	require.NoError(t, err)
	m, err := Merge(ra, rb)
	require.NoError(t, err)
	require.Len(t, m.Targets, 1)
	mt, wt := m.Targets[0], whole.Targets[0]
	assert.Equal(t, wt.Counts(), mt.Counts())
	assert.Equal(t, int64(105), mt.Sent)
	assert.Equal(t, 2, mt.Machines)
	for _, metric := range []latency.Metric{latency.TTFT, latency.TPOT, latency.E2E, latency.ColdStart} {
		wd, md := wt.Dist(metric, "", ""), mt.Dist(metric, "", "")
		assert.Equal(t, wd.Count(), md.Count(), metric.String())
		assert.Equal(t, wd.Mean(), md.Mean(), metric.String())
		assert.Equal(t, wd.SD(), md.SD(), metric.String())
		assert.Equal(t, wd.Quantile(0.95), md.Quantile(0.95), metric.String())
	}
	assert.Equal(t, wt.Tags["device"]["mobile"].Count, mt.Tags["device"]["mobile"].Count)
	var total int64
	for _, bk := range mt.Series.Buckets {
		total += bk.Count
	}
	assert.Equal(t, int64(105), total)
	assert.Len(t, m.Hosts, 2)
	var out bytes.Buffer
	require.NoError(t, m.Render(&out, FormatText, RenderOptions{}))
	assert.Contains(t, out.String(), "merged from 2 machines")

	// The same run twice, or another plan's run, would give wrong figures.
	_, err = Merge(ra, ra)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "same run")
	other := synthetic(t, "m1", 100, 0, 60, 0)
	other.Hosts = []Host{{Name: "third-machine", CPUs: 2}}
	_, err = Merge(ra, other)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "another plan")

	// Machines with seeds of their own ran the same plan, their networks'
	// seeds included.
	rb.Plan.Seed = ra.Plan.Seed + 1
	_, err = Merge(ra, rb)
	assert.NoError(t, err)
	ra.Plan.Targets[0].Network, rb.Plan.Targets[0].Network = "delay=20ms,seed=1", "delay=20ms,seed=2"
	_, err = Merge(ra, rb)
	assert.NoError(t, err)
	rb.Plan.Targets[0].Network = "delay=30ms,seed=2"
	_, err = Merge(ra, rb)
	assert.ErrorContains(t, err, "another plan", "another network is another plan")
}

func TestParseResultRejects(t *testing.T) {
	for _, in := range []string{`{`, `{"version":2}`, `{"version":1,"targets":[null]}`} {
		_, err := ParseResult([]byte(in))
		assert.Error(t, err, in)
	}
	_, err := ReadResult(filepath.Join(t.TempDir(), "none.json"))
	assert.Error(t, err)
}

func TestCompare(t *testing.T) {
	a, b := synthetic(t, "m1", 100, 0, 100, 0), synthetic(t, "m1", 200, 0, 100, 10)
	c, err := Compare(a, b, "a.json", "b.json")
	require.NoError(t, err)
	find := func(fig string) CompareRow {
		for _, r := range c.Rows {
			if r.Figure == fig {
				return r
			}
		}
		t.Fatalf("no %s", fig)
		return CompareRow{}
	}
	ttft := find("TTFT mean")
	assert.InDelta(t, 149.5, ttft.A, 0.01)
	assert.InDelta(t, 249.5, ttft.B, 0.01)
	assert.InDelta(t, 100, ttft.Delta(), 0.01)
	pct, ok := ttft.DeltaPct()
	assert.True(t, ok)
	assert.InDelta(t, 66.9, pct, 0.1)
	assert.InDelta(t, 100*10.0/110, find("error rate").B, 1e-9)
	for _, f := range []Format{FormatText, FormatMarkdown, FormatCSV, FormatHTML} {
		var buf bytes.Buffer
		require.NoError(t, c.Render(&buf, f))
		assert.Contains(t, buf.String(), "66.9%")
	}
	other := synthetic(t, "other", 100, 0, 10, 0)
	two := &Result{Targets: append(append([]*TargetResult{}, a.Targets...), other.Targets...)}
	_, err = Compare(two, &Result{Targets: []*TargetResult{synthetic(t, "x", 1, 0, 2, 0).Targets[0]}}, "a", "b")
	assert.Error(t, err, "nothing in common")
}

func TestNiceTicks(t *testing.T) {
	assert.Equal(t, []float64{0, 20, 40, 60, 80, 100}, niceTicks(0, 100, 5))
	assert.Equal(t, []float64{0.5, 1, 1.5, 2}, niceTicks(0.3, 2.1, 4))
	assert.Equal(t, []float64{7}, niceTicks(7, 7, 5))
	c := &chart{title: "empty <x>", w: 200, h: 100}
	assert.Contains(t, c.svg(), "no data")
	assert.Contains(t, c.svg(), "empty &lt;x&gt;")
}

func TestProgressQuietWhenNotATerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	require.NoError(t, err)
	defer f.Close()
	assert.Nil(t, NewProgress(f))
	assert.Nil(t, NewProgress(nil))
	// The bar itself draws what it is told.
	var b bytes.Buffer
	p := &barProgress{w: &b}
	p.Begin("m1", 10, 0)
	p.Update(Snapshot{Target: "m1", Sent: 5, Done: 4, Errors: 1, Rate: 12.5, P95: 42 * time.Millisecond})
	time.Sleep(150 * time.Millisecond)
	p.Update(Snapshot{Target: "m1", Sent: 6, Done: 5, Errors: 1, Rate: 12.5, P95: 42 * time.Millisecond})
	p.End()
	assert.Contains(t, b.String(), "12.5/s")
	assert.Contains(t, b.String(), "p95 42ms")
}

func TestDisplaySeries(t *testing.T) {
	s := &Series{Width: Duration(time.Second)}
	for i := range 200 { // one request a second for 200 s
		s.Buckets = append(s.Buckets, &Bucket{Count: 1})
		_ = i
	}
	d := displaySeries(s)
	assert.Equal(t, Duration(8*time.Second), d.Width, "coarsened until buckets hold ~5 requests")
	assert.Len(t, d.Buckets, 25)
	assert.Len(t, s.Buckets, 200, "the result's own series is untouched")
	busy := &Series{Width: Duration(time.Second)}
	for range 30 {
		busy.Buckets = append(busy.Buckets, &Bucket{Count: 100})
	}
	assert.Len(t, displaySeries(busy).Buckets, 30)
	assert.Nil(t, displaySeries(nil))
}

func TestDescribeNetworks(t *testing.T) {
	a, b := Target{Name: "a"}, Target{Name: "b"}
	assert.Nil(t, networks([]Target{a, b}), "no impairment, nothing said")
	a.Network, b.Network = "delay=20ms", "delay=20ms"
	assert.Equal(t, []string{"network delay=20ms"}, networks([]Target{a, b}))
	b.Network = ""
	assert.Equal(t, []string{"a over network delay=20ms"}, networks([]Target{a, b}))

	r := synthetic(t, "m1", 100, 0, 10, 0)
	r.Plan.Targets[0].Network = "delay=5ms,loss=1%"
	var out bytes.Buffer
	require.NoError(t, r.Render(&out, FormatText, RenderOptions{}))
	assert.Contains(t, out.String(), ", network delay=5ms,loss=1%")
}

func TestReportRatesPerTarget(t *testing.T) {
	// m1 runs from 0 to 50 s, m2 from 50 to 100 s: each one's rate is
	// over its own 50 s, not over the 100 s of both.
	a, b := synthetic(t, "m1", 100, 0, 50, 0), synthetic(t, "m2", 100, 50, 100, 0)
	both := a
	both.Targets = append(both.Targets, b.Targets...)
	both.Plan.Targets = append(both.Plan.Targets, b.Plan.Targets...)
	rep, err := both.Report()
	require.NoError(t, err)
	seen := 0
	for _, g := range rep.Groups {
		if g.Start != stats.AllStarts {
			continue
		}
		seen++
		own := map[string]*TargetResult{"m1": a.Targets[0], "m2": b.Targets[0]}[g.Endpoint]
		begin, end := own.Recorder.Window()
		want := float64(g.Counts.Requests-g.Counts.Failed) / end.Sub(begin).Seconds()
		assert.InDelta(t, want, g.RequestRate, 1e-9, g.Endpoint)
		assert.Greater(t, g.RequestRate, 0.9, "%s: about 1/s", g.Endpoint)
	}
	assert.Equal(t, 2, seen)
}

// TestSLARowWithoutColdNeedsWarmValues: a target whose covered requests
// are all cold has no value without them; the row does not print 0.
func TestSLARowWithoutColdNeedsWarmValues(t *testing.T) {
	r := synthetic(t, "m1", 100, 0, 1, 0) // one request, cold
	r.Plan.SLAs[0].Threshold = int64(50 * time.Millisecond)
	rep, err := r.Report()
	require.NoError(t, err)
	require.Len(t, rep.SLAs, 1)
	row := slaRow(&rep.SLAs[0])
	assert.Equal(t, "FAIL", row[6])
	assert.Equal(t, "-", row[7], "without cold")
	assert.Equal(t, "100%", row[8], "cold share")
}

// TestReferenceTableSaysNOutSource: TPOT rests on N_out, and the table
// says where each target's N_out came from.
func TestReferenceTableSaysNOutSource(t *testing.T) {
	r := synthetic(t, "m1", 100, 0, 10, 0)
	rows := r.referenceRows()
	require.Len(t, rows, 2)
	i := slices.Index(rows[0], "N_out")
	require.GreaterOrEqual(t, i, 0, "header %q", rows[0])
	assert.Equal(t, "server", rows[1][i])

	var b bytes.Buffer
	require.NoError(t, r.Render(&b, FormatText, RenderOptions{}))
	assert.Contains(t, b.String(), "N_out")
}

// TestTargetRatesAgree: a target's request and token rates are one figure
// over one duration, its wall time, wherever they are printed: the load
// table, the per-group report and the comparison; merged results too.
func TestTargetRatesAgree(t *testing.T) {
	check := func(t *testing.T, r *Result) {
		t.Helper()
		tr := r.Targets[0]
		wall := tr.Wall.D().Seconds()
		require.Positive(t, wall)
		c := tr.Counts()
		rep, err := r.Report()
		require.NoError(t, err)
		g := rep.Group(stats.GroupKey{Endpoint: tr.Name, Start: latency.Warm})
		require.NotNil(t, g)
		assert.InDelta(t, float64(g.Counts.Requests-g.Counts.Failed)/wall, g.RequestRate, 1e-9)
		assert.InDelta(t, float64(g.Counts.OutputTokens)/wall, g.TokenRate, 1e-9)
		assert.Equal(t, fmtNum(float64(c.Requests-c.Failed)/wall), r.loadRows()[1][6])
		for _, f := range figures(tr) {
			if f.name == "ok rate" {
				assert.InDelta(t, float64(c.Requests-c.Failed)/wall, f.v, 1e-9)
			}
		}
		begin, end := tr.Recorder.Window()
		assert.InDelta(t, wall, end.Sub(begin).Seconds(), 1e-9, "the recorder's window is the wall time")
	}
	// The target's first request is sent a second into its run.
	a := syntheticFrom(t, "m1", 100, 1, 20, 0, 0)
	t.Run("one machine", func(t *testing.T) { check(t, a) })
	b := syntheticFrom(t, "m1", 100, 1, 20, 0, 0)
	b.Hosts = []Host{{Name: "second-machine", CPUs: 2}}
	b.Targets[0].Begin = b.Targets[0].Begin.Add(10 * time.Second) // started 10 s later
	begin, end := b.Targets[0].Recorder.Window()
	b.Targets[0].Recorder.SetWindow(begin.Add(10*time.Second), end.Add(10*time.Second))
	m, err := Merge(a, b)
	require.NoError(t, err)
	t.Run("merged", func(t *testing.T) { check(t, m) })
}

// TestSummaryShowsIntendedSendFigures: the summary gives TTFT and total
// latency from the intended send (coordinated-omission corrected) beside
// the plain figures.
func TestSummaryShowsIntendedSendFigures(t *testing.T) {
	p := &Plan{Targets: []Target{{Name: "m1", Provider: "openai", Model: "m1", Stream: true}}, Limits: Limits{Requests: 10}}
	require.NoError(t, p.Prepare())
	col, err := newCollector(p, &p.Targets[0])
	require.NoError(t, err)
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	col.begin(start)
	for i := range 10 {
		// Sent 400 ms behind schedule: TTFT 100 ms, 500 ms from the
		// intended send; total 600 ms, 1000 ms from the intended send.
		s := latency.Sample{Endpoint: "m1", Start: latency.Warm, Streamed: true, Attempts: 1,
			TTFT: 100 * time.Millisecond, E2E: 600 * time.Millisecond,
			TTFTIntended: 500 * time.Millisecond, E2EIntended: 1000 * time.Millisecond, ScheduleLag: 400 * time.Millisecond,
			Begin: start.Add(time.Duration(i) * time.Second)}
		s.End = s.Begin.Add(time.Second)
		s.Has = s.Has.With(latency.TTFT).With(latency.E2E).With(latency.TTFTIntended).With(latency.E2EIntended).With(latency.ScheduleLag)
		col.sent.Add(1)
		col.add(&s, nil, s.Begin)
	}
	r := newResult(p)
	r.Targets = append(r.Targets, col.result())

	var b bytes.Buffer
	require.NoError(t, r.Render(&b, FormatText, RenderOptions{}))
	out := b.String()
	t.Log("\n" + out)
	i := strings.Index(out, "coordinated-omission corrected")
	require.GreaterOrEqual(t, i, 0)
	f := strings.Fields(strings.Split(out[i:], "\n")[2])
	assert.Equal(t, []string{"m1", "500", "±", "0", "500", "/", "500", "/", "500", "1000", "±", "0", "1000", "/", "1000", "/", "1000"}, f[:17])
}

// TestLoadTableRatesShareTheWall: the load table's sent /s and ok /s are
// the sent and the successful requests over one duration, the target's
// wall time (MEASUREMENT.md's throughput: requests / benchmark duration),
// so ok /s never exceeds sent /s. Here a closed loop's first request takes
// 2 s and the seven after it 1 s each: the sends span 8 s of a 9 s run, and
// a rate over the span of the sends ((8 − 1) / 8 s = 0.875/s) would read
// lower than the 8 successes over the 9 s wall (0.889/s).
func TestLoadTableRatesShareTheWall(t *testing.T) {
	p := &Plan{Targets: []Target{{Name: "m1", Provider: "openai", Model: "m1", Stream: true}}, Limits: Limits{Requests: 8}}
	require.NoError(t, p.Prepare())
	col, err := newCollector(p, &p.Targets[0])
	require.NoError(t, err)
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	col.begin(start)
	send := start
	for i := range 8 {
		e2e := time.Second
		if i == 0 {
			e2e = 2 * time.Second
		}
		s := latency.Sample{Endpoint: "m1", Start: latency.Warm, Streamed: true, Attempts: 1, OutputTokens: 2,
			TTFT: e2e / 2, E2E: e2e, Begin: send, End: send.Add(e2e)}
		s.Has = s.Has.With(latency.TTFT).With(latency.E2E).With(latency.OutputTokens)
		col.sent.Add(1)
		col.add(&s, nil, s.Begin)
		send = s.End
	}
	r := newResult(p)
	r.Begin = start
	r.Targets = append(r.Targets, col.result())

	rows := r.loadRows()
	// The rate of the sends is the column after the offered rate.
	sent, ok := slices.Index(rows[0], "offered /s")+1, slices.Index(rows[0], "ok /s")
	require.Positive(t, sent, "header %q", rows[0])
	require.GreaterOrEqual(t, ok, 0, "header %q", rows[0])
	assert.Equal(t, "0.89", rows[1][sent], "8 sent over the 9 s wall")
	assert.Equal(t, "0.89", rows[1][ok], "8 successes over the 9 s wall")
	assert.Equal(t, "sent /s", rows[0][sent], "a rate over the wall, not the achieved send rate")

	var b bytes.Buffer
	require.NoError(t, r.Render(&b, FormatText, RenderOptions{}))
	t.Log("\n" + b.String())
	assert.Contains(t, b.String(), "over the wall time", "the table says what its rates divide by")
}

// TestLadderRowsShowTheRead: the ladder table shows the p95 the decision
// read at the step's end (with the requests then in flight) beside the
// step's final p95, and says both are from the intended send.
func TestLadderRowsShowTheRead(t *testing.T) {
	l := &LadderTrace{Config: Ladder{Metric: MetricE2E, HighWater: Duration(200 * time.Millisecond)}, Steps: []LadderStep{
		{Index: 0, Rate: 10, Sent: 10, Completed: 10, P95: Duration(250 * time.Millisecond), P95Known: true,
			Read: LadderRead{P95: Duration(180 * time.Millisecond), Known: true, InFlight: 3}, Action: Hold, Next: 10},
		{Index: 1, Start: Duration(10 * time.Second), Rate: 10, Sent: 4, Completed: 4, P95: Duration(100 * time.Millisecond), P95Known: true,
			Action: End, Length: Duration(time.Second)},
	}}
	rows := ladderRows(l)
	require.Equal(t, []string{"step", "start s", "rate /s", "sent", "done", "errors", "read p95 ms", "in flight", "action", "next /s", "p95 ms"}, rows[0])
	assert.Equal(t, []string{"0", "0", "10.0", "10", "10", "0", "180", "3", "hold", "10.0", "250"}, rows[1])
	assert.Equal(t, []string{"1", "10.0", "10.0", "4", "4", "0", "-", "-", "end", "-", "100"}, rows[2])
	tr := &TargetResult{Name: "m1", Ladder: l}
	assert.Contains(t, ladderTitle(tr), "from the intended send")
}

// TestDescribeSaysWhatWasSent: the summary's first line names the prompts
// the requests sent: the target's, a mix's classes' own (which replace
// it), or each target's.
func TestDescribeSaysWhatWasSent(t *testing.T) {
	firstLine := func(r *Result) string {
		t.Helper()
		var b bytes.Buffer
		require.NoError(t, r.Render(&b, FormatText, RenderOptions{}))
		line, _, _ := strings.Cut(b.String(), "\n")
		return line
	}
	tokens := func(n int) *Payload { return &Payload{PromptTokens: n} }
	for _, tc := range []struct {
		name    string
		edit    func(p *Plan)
		want    string
		notWant string
	}{
		{"the target's", func(*Plan) {}, ", 512-token prompt, streaming", ""},
		{"each class its own", func(p *Plan) {
			p.Mix = &Mix{Classes: []Class{{Name: "a", Weight: 1, Payload: tokens(64)}, {Name: "b", Weight: 1, Payload: tokens(2048)}}}
		}, ", prompt per class: 64–2048 tokens, streaming", "512"},
		{"one class the target's", func(p *Plan) {
			p.Mix = &Mix{Classes: []Class{{Name: "a", Weight: 1, Payload: tokens(64)}, {Name: "b", Weight: 1}}}
		}, ", prompt per class: 64–512 tokens, streaming", ""},
		{"every class the same", func(p *Plan) {
			p.Mix = &Mix{Classes: []Class{{Name: "a", Weight: 1, Payload: tokens(128)}, {Name: "b", Weight: 1, Payload: tokens(128)}}}
		}, ", 128-token prompt, streaming", "512"},
		{"a class a raw body", func(p *Plan) {
			p.Mix = &Mix{Classes: []Class{{Name: "a", Weight: 1, Payload: tokens(64)}, {Name: "b", Weight: 1, Payload: &Payload{Body: "{}"}}}}
		}, ", payload per class: 64-token prompt, raw body, streaming", "512"},
		{"each target its own", func(p *Plan) {
			p.Targets = append(p.Targets, Target{Name: "m2", Provider: "openai", Model: "m2", Action: "generate", Payload: Payload{PromptTokens: 256}})
		}, ", prompt per target: 256–512 tokens, streaming: m1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := synthetic(t, "m1", 100, 0, 10, 0)
			tc.edit(r.Plan)
			line := firstLine(r)
			assert.Contains(t, line, tc.want)
			if tc.notWant != "" {
				assert.NotContains(t, line, tc.notWant)
			}
		})
	}
}

// TestDescribeSaysAClassSentARawBody: a result's plan keeps no class's
// inline body (it may hold credentials), yet the summary of the run, and
// of the saved result read back, still says that class sent a raw body.
func TestDescribeSaysAClassSentARawBody(t *testing.T) {
	p := &Plan{Targets: []Target{{Name: "m1", Provider: "openai", Model: "m1", Stream: true}}, Limits: Limits{Requests: 1},
		Mix: &Mix{Classes: []Class{{Name: "a", Weight: 1, Payload: &Payload{PromptTokens: 64}},
			{Name: "b", Weight: 1, Payload: &Payload{Body: `{"secret":"x"}`}}}}}
	require.NoError(t, p.Prepare())
	r := newResult(p)
	var js bytes.Buffer
	require.NoError(t, r.WriteJSON(&js))
	assert.NotContains(t, js.String(), "secret")
	back, err := ParseResult(js.Bytes())
	require.NoError(t, err)
	for _, res := range []*Result{r, back} {
		var b bytes.Buffer
		require.NoError(t, res.Render(&b, FormatText, RenderOptions{}))
		line, _, _ := strings.Cut(b.String(), "\n")
		assert.Contains(t, line, ", payload per class: 64-token prompt, raw body")
	}
}

// TestLadderTitleSaysWhyNoRateHeld: when no step held its rate, the title
// says why: the first step already over the high-water mark (with its
// p95 and what to change), its requests failed, or the run ended within
// it.
func TestLadderTitleSaysWhyNoRateHeld(t *testing.T) {
	cfg := Ladder{}.WithDefaults() // high water 200 ms, step 10 s
	ms := func(n int) Duration { return Duration(time.Duration(n) * time.Millisecond) }
	for _, tc := range []struct {
		name  string
		steps []LadderStep
		says  string
	}{
		{"over at once", []LadderStep{
			{Rate: 10, Sent: 100, Completed: 100, P95: ms(812), P95Known: true, Action: BackOff, Next: 10},
			{Index: 1, Rate: 10, Sent: 100, Completed: 100, P95: ms(830), P95Known: true, Action: BackOff, Next: 10},
		}, "none: the first step, at 10.0 req/s, already had p95 812 ms > 200ms (raise the high-water mark, or lower the start and floor rates)"},
		{"failed", []LadderStep{
			{Rate: 10, Sent: 100, Completed: 100, Errors: 100, P95Failed: true, Action: BackOff, Next: 10},
		}, "none: the first step, at 10.0 req/s, failed (failures filled its p95)"},
		{"nothing came back", []LadderStep{
			{Rate: 10, Sent: 100, Action: BackOff, Next: 10},
		}, "none: the first step, at 10.0 req/s, had no request that gave its latency"},
		{"too short", []LadderStep{
			{Rate: 10, Sent: 20, Completed: 20, P95: ms(50), P95Known: true, Action: End, Length: Duration(2 * time.Second)},
		}, "none: the run ended within the first step (2s of 10s); run for more than a step"},
	} {
		tr := &TargetResult{Name: "m1", Ladder: &LadderTrace{Config: cfg, Steps: tc.steps}}
		assert.Contains(t, ladderTitle(tr), tc.says, tc.name)
	}
	held := &TargetResult{Name: "m1", Ladder: &LadderTrace{Config: cfg, Steps: []LadderStep{
		{Rate: 10, Sent: 100, Completed: 100, P95: ms(150), P95Known: true, Action: Hold, Next: 10},
	}}}
	assert.Contains(t, ladderTitle(held), "≤ 200ms: 10.0 req/s;")
}
