package bench

import (
	"cmp"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"slices"

	"github.com/cloudinfer/cloudinfer/bench/servermetrics"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/latency/stats"
)

// RenderHTML writes a self-contained HTML report: the summary tables and
// inline SVG charts (latency over time, throughput, the ladder's rate
// trace, TTFT and TPOT histograms, cold vs warm, errors by code). It loads
// nothing from the network and runs no script.
func (r *Result) RenderHTML(w io.Writer) error {
	rep, err := r.Report()
	if err != nil {
		return err
	}
	var desc stringWriter
	r.describe(&desc)
	page := htmlPage{
		Title:     "cloudinfer bench report",
		Desc:      desc.String(),
		Reference: r.referenceRows(),
		Sections:  r.sections(rep),
		Notes:     r.notes(),
	}
	if !r.Begin.IsZero() {
		page.When = r.Begin.Format("2006-01-02 15:04:05 MST")
	}
	for _, h := range r.Hosts {
		page.Hosts = append(page.Hosts, fmt.Sprintf("%s (%d CPUs)", h.Name, h.CPUs))
	}
	add := func(title string, c *chart) {
		c.title = title
		page.Charts = append(page.Charts, htmlChart{Title: title, SVG: template.HTML(c.svg())}) //nolint:gosec // built from escaped text
	}
	for _, tr := range r.Targets {
		add(tr.Name+": total latency over time (points: sampled requests; lines: p50, p95 per bucket)", latencyOverTime(tr))
		add(tr.Name+": requests per second by intended send time", throughputChart(tr))
		if c := serverGaugesChart(tr); c != nil {
			add(tr.Name+": server gauges over time (lines: at each scrape; bars: client req/s)", c)
		}
		if c := kvCacheChart(tr); c != nil {
			add(tr.Name+": server KV cache % and client p95 total (% of its largest) over time", c)
		}
		if tr.Ladder != nil {
			rate, p95 := ladderCharts(tr)
			add(tr.Name+": QPS ladder, scheduled rate per step", rate)
			add(tr.Name+": QPS ladder, p95 "+tr.Ladder.Config.Metric+" per step", p95)
		}
	}
	if slices.ContainsFunc(r.Targets, func(t *TargetResult) bool { return t.Stream }) {
		add("TTFT distribution (share of sampled requests per bin; last bin: tail)", r.histogram(latency.TTFT, "TTFT", func(p Point) float64 { return p.TTFT }))
		add("TPOT distribution (share of sampled requests per bin; last bin: tail)", r.histogram(latency.TPOT, "TPOT", func(p Point) float64 { return p.TPOT }))
	} else {
		add("Total latency distribution (share per bin; last bin: tail)", r.histogram(latency.E2E, "total latency", func(p Point) float64 { return p.E2E }))
	}
	if c := r.decompositionChart(); c != nil {
		add("Where the time went: mean ms per group, stacked", c)
	}
	add("Cold vs warm: mean total latency and TTFT", r.coldWarmChart())
	add("Failed requests by code", r.errorChart())
	if err := htmlTemplate.Execute(w, page); err != nil {
		return errcodes.Wrap(err, errcodes.Internal, "bench: render HTML")
	}
	return nil
}

type stringWriter struct{ b []byte }

func (s *stringWriter) Write(p []byte) (int, error) { s.b = append(s.b, p...); return len(p), nil }
func (s *stringWriter) String() string              { return string(s.b) }

type htmlPage struct {
	Title, Desc, When string
	Hosts             []string
	Reference         [][]string
	Sections          []section
	Charts            []htmlChart
	Notes             []string
}

type htmlChart struct {
	Title string
	SVG   template.HTML
}

func latencyOverTime(tr *TargetResult) *chart {
	c := &chart{title: "Latency over time (each point a sampled request; lines per bucket)", xlabel: "seconds from start (intended send)",
		ylabel: "total latency ms", w: 1180, h: 340, yFromZero: true}
	var warm, cold, fail series
	warm = series{name: "warm", color: color(0), kind: kindPoints}
	cold = series{name: "cold", color: color(3), kind: kindPoints}
	fail = series{name: "failed", color: "#999", kind: kindPoints}
	for _, p := range tr.Points {
		switch {
		case p.Err != "":
			fail.xs, fail.ys = append(fail.xs, p.T), append(fail.ys, 0)
		case p.Start == string(latency.Cold):
			cold.xs, cold.ys = append(cold.xs, p.T), append(cold.ys, p.E2E)
		default:
			warm.xs, warm.ys = append(warm.xs, p.T), append(warm.ys, p.E2E)
		}
	}
	p50 := series{name: "p50", color: color(2), kind: kindLine}
	p95 := series{name: "p95", color: color(1), kind: kindLine}
	if s := displaySeries(tr.Series); s != nil {
		for i, b := range s.Buckets {
			if b.E2E == nil || b.E2E.Count() < minBucketSamples {
				continue
			}
			x := (float64(i) + 0.5) * s.Width.D().Seconds()
			p50.xs, p50.ys = append(p50.xs, x), append(p50.ys, b.E2E.Quantile(0.5)/1e6)
			p95.xs, p95.ys = append(p95.xs, x), append(p95.ys, b.E2E.Quantile(0.95)/1e6)
		}
	}
	for _, s := range []series{warm, cold, fail, p50, p95} {
		if len(s.xs) > 0 {
			c.series = append(c.series, s)
		}
	}
	return c
}

// Chart bucketing: at most maxChartBuckets bars, and on average at least
// minBucketSamples requests in each, so that a slow run's chart shows
// rates and percentiles rather than single requests.
const (
	maxChartBuckets  = 60
	minBucketSamples = 5
)

// displaySeries returns a copy of s coarsened for charts.
func displaySeries(s *Series) *Series {
	if s == nil {
		return nil
	}
	c := s.copy()
	var total int64
	for _, b := range c.Buckets {
		total += b.Count
	}
	for len(c.Buckets) > 1 && (len(c.Buckets) > maxChartBuckets || total < int64(minBucketSamples*len(c.Buckets))) {
		c.coarsen()
	}
	return c
}

func throughputChart(tr *TargetResult) *chart {
	c := &chart{title: "Requests finished per second, by intended send time", xlabel: "seconds from start",
		ylabel: "requests/s", w: 1180, h: 240, yFromZero: true}
	s := displaySeries(tr.Series)
	if s == nil {
		return c
	}
	wd := s.Width.D().Seconds()
	ok := series{name: "ok", color: color(2), kind: kindBars, width: wd}
	bad := series{name: "failed", color: color(3), kind: kindBars, width: wd}
	for i, b := range s.Buckets {
		x := (float64(i) + 0.5) * wd
		ok.xs, ok.ys = append(ok.xs, x), append(ok.ys, float64(b.Count-b.Errors)/wd)
		if b.Errors > 0 {
			bad.xs, bad.ys = append(bad.xs, x), append(bad.ys, float64(b.Errors)/wd)
		}
	}
	c.series = append(c.series, ok)
	if len(bad.xs) > 0 {
		c.series = append(c.series, bad)
	}
	return c
}

func ladderCharts(tr *TargetResult) (*chart, *chart) {
	l := tr.Ladder
	rate := &chart{title: "Scheduled rate per step", xlabel: "seconds from start", ylabel: "requests/s", w: 580, h: 280, yFromZero: true}
	p95 := &chart{title: "p95 " + l.Config.Metric + " per step", xlabel: "seconds from start", ylabel: "ms", w: 580, h: 280, yFromZero: true}
	rs := series{name: "rate", color: color(0), kind: kindStep}
	ps := series{name: "p95", color: color(1), kind: kindLine}
	step := l.Config.Step.D().Seconds()
	for _, s := range l.Steps {
		x := s.Start.D().Seconds()
		rs.xs, rs.ys = append(rs.xs, x), append(rs.ys, s.Rate)
		if s.P95Known {
			w := step
			if s.Length > 0 {
				w = s.Length.D().Seconds() // a partial last step
			}
			ps.xs, ps.ys = append(ps.xs, x+w/2), append(ps.ys, float64(s.P95)/1e6)
		}
	}
	if n := len(l.Steps); n > 0 {
		last := l.Steps[n-1]
		length := step
		if last.Length > 0 {
			length = last.Length.D().Seconds()
		}
		rs.xs, rs.ys = append(rs.xs, last.Start.D().Seconds()+length), append(rs.ys, last.Rate)
	}
	rate.series = []series{rs}
	if len(ps.xs) > 0 {
		x0, x1 := 0.0, float64(len(l.Steps))*step
		p95.series = []series{ps,
			{name: "high water", color: color(3), kind: kindLine, dash: true, xs: []float64{x0, x1}, ys: []float64{float64(l.Config.HighWater) / 1e6, float64(l.Config.HighWater) / 1e6}},
			{name: "low water", color: color(2), kind: kindLine, dash: true, xs: []float64{x0, x1}, ys: []float64{float64(l.Config.LowWater) / 1e6, float64(l.Config.LowWater) / 1e6}},
		}
	}
	return rate, p95
}

// histogram bins the sampled points' values of one metric, per target, as
// shares so that targets with different counts compare. The range ends at
// the largest p99 of the targets' distributions; the last bin holds the
// tail beyond it.
func (r *Result) histogram(m latency.Metric, name string, get func(Point) float64) *chart {
	c := &chart{title: name + " distribution (share of sampled requests per bin; last bin holds the tail)", xlabel: name + " ms", ylabel: "share %", w: 1180, h: 300, yFromZero: true}
	lo, hi := math.Inf(1), 0.0
	for _, tr := range r.Targets {
		d := tr.Dist(m, "", "")
		if d.Count() == 0 {
			continue
		}
		lo = min(lo, float64(d.Min())/1e6)
		hi = max(hi, d.Quantile(0.99)/1e6)
	}
	if !(hi > lo) {
		return c
	}
	const bins = 40
	width := (hi - lo) / bins
	n := len(r.Targets)
	for ti, tr := range r.Targets {
		counts := make([]float64, bins)
		total := 0.0
		for _, p := range tr.Points {
			v := get(p)
			if p.Err != "" || v <= 0 {
				continue
			}
			i := min(max(int((v-lo)/width), 0), bins-1)
			counts[i]++
			total++
		}
		if total == 0 {
			continue
		}
		s := series{name: tr.Name, color: color(ti), kind: kindBars, width: width / float64(n)}
		for i, ct := range counts {
			x := lo + (float64(i)+0.5)*width - width/2 + (float64(ti)+0.5)*width/float64(n)
			s.xs, s.ys = append(s.xs, x), append(s.ys, 100*ct/total)
		}
		c.series = append(c.series, s)
	}
	return c
}

func (r *Result) coldWarmChart() *chart {
	c := &chart{title: "Cold vs warm: mean total latency (TTFT where streamed)", ylabel: "ms", w: 580, h: 300, yFromZero: true}
	var cats []string
	kinds := []struct {
		name  string
		st    stats.Starts
		m     latency.Metric
		color string
	}{
		{"warm total", stats.StartsWarm, latency.E2E, color(0)},
		{"cold total", stats.StartsCold, latency.E2E, color(3)},
		{"warm TTFT", stats.StartsWarm, latency.TTFT, color(5)},
		{"cold TTFT", stats.StartsCold, latency.TTFT, color(1)},
	}
	ss := make([]series, len(kinds))
	for i, k := range kinds {
		ss[i] = series{name: k.name, color: k.color, kind: kindBars, width: 0.8 / float64(len(kinds))}
	}
	for ti, tr := range r.Targets {
		cats = append(cats, tr.Name)
		for i, k := range kinds {
			if k.m == latency.TTFT && !tr.Stream {
				continue
			}
			d := tr.Dist(k.m, "", k.st)
			if d.Count() == 0 {
				continue
			}
			ss[i].xs = append(ss[i].xs, float64(ti)-0.4+(float64(i)+0.5)*0.8/float64(len(kinds)))
			ss[i].ys = append(ss[i].ys, d.Mean()/1e6)
		}
	}
	for _, s := range ss {
		if len(s.xs) > 0 {
			c.series = append(c.series, s)
		}
	}
	if len(c.series) > 0 {
		c.categories = cats
		// Keep the category axis even when a target has no bar.
		c.series = append(c.series, series{kind: kindBars, color: "none", xs: []float64{-0.4, float64(len(cats)) - 0.6}, ys: []float64{0, 0}, width: 0.01})
	}
	return c
}

func (r *Result) errorChart() *chart {
	c := &chart{title: "Failed requests by code", ylabel: "requests", w: 580, h: 300, yFromZero: true}
	codes := map[string]bool{}
	for _, tr := range r.Targets {
		for k := range tr.Counts().Errors {
			codes[k] = true
		}
	}
	cats := slices.Sorted(maps.Keys(codes))
	if len(cats) == 0 {
		return c
	}
	n := float64(len(r.Targets))
	for ti, tr := range r.Targets {
		errs := tr.Counts().Errors
		s := series{name: tr.Name, color: color(ti), kind: kindBars, width: 0.8 / n}
		for i, code := range cats {
			s.xs = append(s.xs, float64(i)-0.4+(float64(ti)+0.5)*0.8/n)
			s.ys = append(s.ys, float64(errs[code]))
		}
		c.series = append(c.series, s)
	}
	c.categories = cats
	return c
}

var htmlTemplate = template.Must(template.New("report").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#222;background:#fafafa}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px}
.meta{color:#555;margin-bottom:16px}
table{border-collapse:collapse;background:#fff;margin:4px 0 12px;font-variant-numeric:tabular-nums}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:right;white-space:nowrap}
th{background:#f0f3f7} td:first-child,th:first-child{text-align:left}
.charts{display:flex;flex-wrap:wrap;gap:12px}
figure{margin:0;background:#fff;border:1px solid #ddd;padding:6px}
.note{background:#fff4e5;border-left:4px solid #E69F00;padding:6px 10px;margin:6px 0}
</style></head><body>
<h1>{{.Title}}</h1>
<div class="meta">{{.Desc}}{{if .When}}<br>started {{.When}}{{end}}{{if .Hosts}}<br>machines: {{range $i, $h := .Hosts}}{{if $i}}, {{end}}{{$h}}{{end}}{{end}}</div>
{{range .Notes}}<div class="note">{{.}}</div>{{end}}
<h2>Latency (ms; mean ± sd, then p50 / p95 / p99)</h2>
<table>{{range $i, $r := .Reference}}<tr>{{range $r}}{{if eq $i 0}}<th>{{.}}</th>{{else}}<td>{{.}}</td>{{end}}{{end}}</tr>{{end}}</table>
<h2>Charts</h2>
<div class="charts">{{range .Charts}}<figure>{{.SVG}}</figure>{{end}}</div>
{{range .Sections}}<h2>{{.Title}}</h2>
<table>{{range $i, $r := .Rows}}<tr>{{range $r}}{{if eq $i 0}}<th>{{.}}</th>{{else}}<td>{{.}}</td>{{end}}{{end}}</tr>{{end}}</table>
{{end}}
</body></html>
`))

// timeAxis returns the x range a target's over-time charts share.
func timeAxis(tr *TargetResult) [2]float64 {
	if s := displaySeries(tr.Series); s != nil && len(s.Buckets) > 0 {
		return [2]float64{0, float64(len(s.Buckets)) * s.Width.D().Seconds()}
	}
	return [2]float64{0, tr.Wall.D().Seconds()}
}

// gaugeSource returns the first scraped server with gauges over time.
func gaugeSource(tr *TargetResult) *servermetrics.Summary {
	if tr.Server == nil {
		return nil
	}
	for _, s := range tr.Server.Sources {
		if len(s.Over) > 0 {
			return s
		}
	}
	return nil
}

// serverGaugesChart draws the server's running and waiting requests at
// each scrape over the client's completion rate, on the client's time
// axis, so that a ladder's knee shows what the server did then.
func serverGaugesChart(tr *TargetResult) *chart {
	src := gaugeSource(tr)
	if src == nil {
		return nil
	}
	c := &chart{title: "server gauges over time", xlabel: "seconds from start", ylabel: "requests · requests/s",
		w: 1180, h: 260, yFromZero: true, xRange: timeAxis(tr)}
	if t := throughputChart(tr); len(t.series) > 0 {
		rate := t.series[0]
		rate.name, rate.color = "client requests/s", "#bbbbbb"
		c.series = append(c.series, rate)
	}
	shift := src.Begin.Sub(tr.Begin).Seconds()
	for i, role := range []servermetrics.Role{servermetrics.RoleRunning, servermetrics.RoleWaiting} {
		s := series{name: "server " + string(role), color: color(i), kind: kindLine}
		for _, p := range src.Over {
			if v, ok := p.Gauges[role]; ok && p.T+shift <= c.xRange[1] {
				s.xs, s.ys = append(s.xs, p.T+shift), append(s.ys, v)
			}
		}
		if len(s.xs) > 0 {
			c.series = append(c.series, s)
		}
	}
	return c
}

// kvCacheChart draws the server's KV-cache use (%) beside the client's
// p95 total latency per bucket, as a share of its largest so that both
// read on one 0–100 axis (in ms it would flatten the KV line); nil when
// the server reports none.
func kvCacheChart(tr *TargetResult) *chart {
	src := gaugeSource(tr)
	if src == nil {
		return nil
	}
	shift := src.Begin.Sub(tr.Begin).Seconds()
	kv := series{name: "server KV cache %", color: color(4), kind: kindLine}
	end := timeAxis(tr)[1]
	for _, p := range src.Over {
		if v, ok := p.Gauges[servermetrics.RoleKVCache]; ok && p.T+shift <= end {
			kv.xs, kv.ys = append(kv.xs, p.T+shift), append(kv.ys, 100*v)
		}
	}
	if len(kv.xs) == 0 {
		return nil
	}
	c := &chart{title: "KV cache over time", xlabel: "seconds from start", ylabel: "%", w: 1180, h: 240, yFromZero: true, xRange: timeAxis(tr)}
	for _, s := range latencyOverTime(tr).series {
		if s.name != "p95" {
			continue
		}
		top := 0.0
		for _, y := range s.ys {
			if !math.IsNaN(y) && !math.IsInf(y, 0) {
				top = max(top, y)
			}
		}
		if top <= 0 {
			continue
		}
		ys := make([]float64, len(s.ys))
		for i, y := range s.ys {
			ys[i] = 100 * y / top
		}
		s.ys = ys
		s.name = "client p95 total, % of its largest (" + fmtNum(top) + " ms)"
		c.series = append(c.series, s)
	}
	c.series = append(c.series, kv)
	return c
}

// decompositionChart stacks each decomposition row's parts in one bar.
func (r *Result) decompositionChart() *chart {
	var ds []Decomposition
	for _, tr := range r.Targets {
		ds = append(ds, tr.Decompose()...)
	}
	if len(ds) == 0 {
		return nil
	}
	c := &chart{title: "where the time went", ylabel: "mean ms", w: 1180, h: 320, yFromZero: true}
	parts := []struct {
		name string
		get  func(d *Decomposition) float64
	}{
		{"queue", func(d *Decomposition) float64 { return d.Queue }},
		{"prefill", func(d *Decomposition) float64 { return d.Prefill }},
		{"server other", func(d *Decomposition) float64 { return d.ServerOther }},
		{"network+client", func(d *Decomposition) float64 { return d.Residual }},
		{"server decode", func(d *Decomposition) float64 { return d.ServerDecode }},
		{"decode transit", func(d *Decomposition) float64 { return d.DecodeResidual }},
	}
	stacks := make([]series, len(parts))
	for i, p := range parts {
		stacks[i] = series{name: p.name, color: color([]int{1, 0, 7, 3, 2, 5}[i]), kind: kindBars, width: 0.6}
	}
	for x, d := range ds {
		label := d.Target
		if d.Class != "" {
			label += " " + d.Class
		}
		label += " " + cmp.Or(d.Start, "all") + " (" + d.Method + ")"
		c.categories = append(c.categories, label)
		base := 0.0
		for i, p := range parts {
			v := p.get(&d)
			if math.IsNaN(v) || v <= 0 {
				continue
			}
			s := &stacks[i]
			s.xs, s.ys, s.base = append(s.xs, float64(x)), append(s.ys, base+v), append(s.base, base)
			base += v
		}
	}
	for _, s := range stacks {
		if len(s.xs) > 0 {
			c.series = append(c.series, s)
		}
	}
	return c
}
