package bench

import (
	"cmp"
	"encoding/csv"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cloudinfer/cloudinfer/bench/servermetrics"
	"github.com/cloudinfer/cloudinfer/cloudreq"
	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/latency/stats"
)

// Format is a rendering of a Result.
type Format string

// Formats.
const (
	// FormatText is the terminal summary: the reference-style table
	// (TTFT, TPOT and total mean ± sd, p50/p95/p99, N_out's source), TTFT
	// and total from the intended send (coordinated-omission corrected),
	// load and generator health, errors by code, SLAs, the ladder's trace
	// and tag shares.
	FormatText Format = "text"
	// FormatMarkdown is the same summary as Markdown tables, followed by
	// the full per-group latency report.
	FormatMarkdown Format = "markdown"
	// FormatCSV is the latency report's tidy CSV (one value per row, see
	// RenderReport), plus rows for the load (table "load") and the ladder
	// (table "ladder").
	FormatCSV Format = "csv"
	// FormatJSON is the full, mergeable Result.
	FormatJSON Format = "json"
	// FormatHTML is a self-contained HTML report with charts.
	FormatHTML Format = "html"
)

// Formats lists every format.
var Formats = []Format{FormatText, FormatMarkdown, FormatCSV, FormatJSON, FormatHTML}

// RenderOptions tunes a rendering.
type RenderOptions struct {
	// Detail adds the full per-group latency report (every metric, the
	// LogNormal fits) to the text summary.
	Detail bool
}

// Render writes r in format f.
func (r *Result) Render(w io.Writer, f Format, opts RenderOptions) error {
	switch f {
	case FormatText:
		return r.renderSummary(w, false, opts.Detail)
	case FormatMarkdown:
		return r.renderSummary(w, true, true)
	case FormatCSV:
		return r.renderCSV(w)
	case FormatJSON:
		return r.WriteJSON(w)
	case FormatHTML:
		return r.RenderHTML(w)
	default:
		return errcodes.Errorf(errcodes.InvalidParam, "bench: unknown format %q (text, markdown, csv, json, html)", f)
	}
}

// Recorder returns one recorder holding every target's requests (each
// under its target's name).
func (r *Result) Recorder() (*stats.Recorder, error) {
	all := &stats.Recorder{}
	for _, t := range r.Targets {
		if err := all.Merge(t.Recorder); err != nil {
			return nil, err
		}
	}
	return all, nil
}

// SLAs returns the plan's SLAs, each one that names no endpoint repeated
// for every target, so that each target is checked on its own.
func (r *Result) SLAs() []stats.SLA {
	var out []stats.SLA
	if r.Plan == nil {
		return nil
	}
	for _, s := range r.Plan.slas() {
		if s.Endpoint != "" {
			out = append(out, s)
			continue
		}
		for _, t := range r.Targets {
			s.Endpoint = t.Name
			out = append(out, s)
		}
	}
	return out
}

// Report returns the latency report of every target, with the SLAs
// checked per target.
func (r *Result) Report() (*stats.Report, error) {
	rec, err := r.Recorder()
	if err != nil {
		return nil, err
	}
	slas := r.SLAs()
	if slas == nil {
		slas = []stats.SLA{}
	}
	rep := rec.Report(stats.ReportOptions{SLAs: slas})
	// Each target's rates are over its own window: targets run one after
	// another would otherwise be divided by the span of them all.
	own := map[stats.GroupKey]stats.GroupReport{}
	for _, tr := range r.Targets {
		if tr.Recorder == nil {
			continue
		}
		for _, g := range tr.Recorder.Report(stats.ReportOptions{SLAs: []stats.SLA{}, Metrics: []latency.Metric{}}).Groups {
			own[g.GroupKey] = g
		}
	}
	for i := range rep.Groups {
		g := &rep.Groups[i]
		if o, ok := own[g.GroupKey]; ok {
			g.RequestRate, g.TokenRate, g.Goodput = o.RequestRate, o.TokenRate, o.Goodput
		}
	}
	return rep, nil
}

// table writes aligned text or Markdown tables.
type table struct {
	w    io.Writer
	md   bool
	rows [][]string
}

func (t *table) flush() {
	if len(t.rows) == 0 {
		return
	}
	if t.md {
		for i, r := range t.rows {
			fmt.Fprintf(t.w, "| %s |\n", strings.Join(r, " | "))
			if i == 0 {
				fmt.Fprintln(t.w, "|"+strings.Repeat("---|", len(r)))
			}
		}
	} else {
		tw := tabwriter.NewWriter(t.w, 0, 0, 2, ' ', 0)
		for _, r := range t.rows {
			fmt.Fprintln(tw, strings.Join(r, "\t")+"\t")
		}
		_ = tw.Flush()
	}
	fmt.Fprintln(t.w)
	t.rows = nil
}

func ms(v float64) string { return fmtNum(v / 1e6) }

// decimals returns how many decimals the reference style prints v with:
// 428, 28.4, 0.85, 0.032.
func decimals(v float64) int {
	a := math.Abs(v)
	switch {
	case a >= 100 || a == 0:
		return 0
	case a >= 1:
		return 1
	case a >= 0.1:
		return 2
	default:
		return 3
	}
}

// fmtNum prints in the reference style: 428, 28.4, 0.85, 0.032.
func fmtNum(v float64) string { return strconv.FormatFloat(v, 'f', decimals(v), 64) }

// fmtMeanSD formats mean ± sd with the mean's precision: "428 ± 31",
// "28.4 ± 2.1".
func fmtMeanSD(mean, sd float64) string {
	d := decimals(mean)
	return strconv.FormatFloat(mean, 'f', d, 64) + " ± " + strconv.FormatFloat(sd, 'f', d, 64)
}

func meanSD(d *stats.Dist) string {
	if d.Count() == 0 {
		return "-"
	}
	return fmtMeanSD(d.Mean()/1e6, d.SD()/1e6)
}

func pcts(d *stats.Dist) string {
	if d.Count() == 0 {
		return "-"
	}
	return ms(d.Quantile(0.5)) + " / " + ms(d.Quantile(0.95)) + " / " + ms(d.Quantile(0.99))
}

// ReferenceTable writes the reference-style table: one row per target,
// TTFT, TPOT and total (E2E) as mean ± sd in ms, then their p50 / p95 /
// p99, and where the N_out that TPOT divides by came from (server usage,
// counted from the stream, or mixed). Only successful requests count; n is
// their number.
func (r *Result) ReferenceTable(w io.Writer, md bool) {
	t := &table{w: w, md: md, rows: r.referenceRows()}
	t.flush()
}

func (r *Result) referenceRows() [][]string {
	rows := [][]string{{"target", "n", "failed", "TTFT ms", "TPOT ms/token", "total ms", "TTFT p50/p95/p99", "TPOT p50/p95/p99", "total p50/p95/p99", "N_out"}}
	for _, tr := range r.Targets {
		c := tr.Counts()
		ttft, tpot, e2e := tr.Dist(latency.TTFT, "", ""), tr.Dist(latency.TPOT, "", ""), tr.Dist(latency.E2E, "", "")
		if !tr.Stream {
			ttft = &stats.Dist{} // a whole body has no first token
		}
		rows = append(rows, []string{tr.Name, strconv.FormatInt(c.Requests-c.Failed, 10), strconv.FormatInt(c.Failed, 10),
			meanSD(ttft), meanSD(tpot), meanSD(e2e), pcts(ttft), pcts(tpot), pcts(e2e), cmp.Or(c.TokenSource(), "-")})
	}
	return rows
}

// section is a titled table of a summary.
type section struct {
	Title string
	Rows  [][]string // header first
}

// sections returns the summary's tables after the reference table.
func (r *Result) sections(rep *stats.Report) []section {
	var out []section
	add := func(title string, rows [][]string) {
		if len(rows) > 1 {
			out = append(out, section{title, rows})
		}
	}
	if rows := r.classRows(); len(rows) > 2 {
		add("By class", rows)
	}
	add("From the intended send (coordinated-omission corrected)", r.intendedRows())
	add(loadTitle, r.loadRows())
	add("Errors by code", r.errorRows())
	add("Cold and warm starts", r.coldRows())
	add("SLAs", slaRows(rep))
	for _, tr := range r.Targets {
		if tr.Ladder != nil {
			add(ladderTitle(tr), ladderRows(tr.Ladder))
		}
	}
	add("Tags", r.tagRows())
	add(turnsTitle, r.turnRows())
	add("Stateful sessions (SageMaker)", r.sessionRows())
	add(decompositionTitle, r.decompositionRows())
	add(spanJoinTitle, r.spanJoinRows())
	add(serverTitle, r.serverRows())
	return out
}

// spanJoinTitle heads the spans file join's table.
const spanJoinTitle = "Server per-request spans (vLLM's, joined by X-Request-Id): a measured request without a span is left out of the exact (vLLM spans) rows; " +
	"spans of no measured request are the warm-up's, another client's or an earlier run's; estimated: a V0 span with no prefill of its own (prefill = TTFT − queue)"

// spanJoinRows is the spans file join's table.
func (r *Result) spanJoinRows() [][]string {
	rows := [][]string{{"target", "file", "spans read", "matched", "measured without a span", "spans of no measured request", "estimated", "bad lines"}}
	for _, tr := range r.Targets {
		if tr.Server == nil || tr.Server.SpanJoin == nil {
			continue
		}
		j := tr.Server.SpanJoin
		rows = append(rows, []string{tr.Name, j.File, strconv.FormatInt(j.Spans, 10), strconv.FormatInt(j.Matched, 10),
			strconv.FormatInt(j.Unmatched, 10), strconv.FormatInt(j.Others, 10), strconv.FormatInt(j.Estimated, 10), strconv.FormatInt(j.Bad, 10)})
	}
	return rows
}

// decompositionTitle heads the "where the time went" table, with its
// method.
const decompositionTitle = "Where the time went (means, ms): client TTFT = network+client + queue + prefill + server other; E2E = TTFT + server decode + decode transit. " +
	"network+client is client TTFT − the server's own TTFT (without one: − queue − prefill). " +
	"exact: per request, the emulator's own records joined with the client's measurements; exact (vLLM spans): per request, the server's per-request spans joined with them; " +
	"histogram: the server's histogram means over the window (exact means, but over all the server's requests, another client's too, with no class or start split; " +
	"its TTFT counts a cold start, the client's does not)"

// serverTitle heads the server metrics table.
const serverTitle = "Server metrics over the measured window (counters as deltas, gauges min/mean/max over the scrapes; * a bucket estimate: no finer than its histogram bucket)"

// decompositionRows is the "where the time went" table.
func (r *Result) decompositionRows() [][]string {
	rows := [][]string{{"target", "class", "start", "method", "n", "client TTFT", "queue", "prefill", "server other", "network+client", "share", "server decode", "decode transit", "client E2E"}}
	f := func(v float64) string {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "-"
		}
		return fmtNum(v)
	}
	for _, tr := range r.Targets {
		for _, d := range tr.Decompose() {
			share := "-"
			if v := d.Share(); !math.IsNaN(v) && !math.IsInf(v, 0) {
				share = fmt.Sprintf("%.1f%%", 100*v)
				if !d.Streamed {
					share += " of E2E"
				}
			}
			rows = append(rows, []string{d.Target, cmp.Or(d.Class, "all"), cmp.Or(d.Start, "all"), d.Method, fmtNum(d.N),
				f(d.ClientTTFT), f(d.Queue), f(d.Prefill), f(d.ServerOther), f(d.Residual), share, f(d.ServerDecode), f(d.DecodeResidual), f(d.ClientE2E)})
		}
	}
	return rows
}

// serverRows is the server metrics table: per target and source, the
// scraping's own figures and the known families' reductions.
func (r *Result) serverRows() [][]string {
	rows := [][]string{{"target", "source", "server", "scrapes", "scrape cost", "restarts", "queue mean / p90*", "TTFT mean / p90*", "running", "waiting", "KV cache", "prefix hits", "families"}}
	for _, tr := range r.Targets {
		if tr.Server == nil {
			continue
		}
		for _, s := range tr.Server.Sources {
			scrapes := strconv.Itoa(s.Scrapes)
			if s.Failed > 0 {
				scrapes += fmt.Sprintf(" (%d failed)", s.Failed)
			}
			if s.Machines > 1 {
				scrapes += fmt.Sprintf(", 1 of %d machines", s.Machines)
			}
			cost := fmt.Sprintf("%s / %s ms, %d KiB", ms(float64(s.Cost.Mean)), ms(float64(s.Cost.Max)), s.Cost.Bytes/1024)
			known, raw := 0, 0
			for _, f := range s.Families {
				if f.Known {
					known++
				} else {
					raw++
				}
			}
			rows = append(rows, []string{tr.Name, s.Source, cmp.Or(s.Server, "-"), scrapes, cost, strconv.Itoa(s.Restarts),
				histCell(s, servermetrics.RoleQueue), histCell(s, servermetrics.RoleTTFT),
				gaugeCell(s, servermetrics.RoleRunning, 1), gaugeCell(s, servermetrics.RoleWaiting, 1), gaugeCell(s, servermetrics.RoleKVCache, 100),
				prefixCell(s), fmt.Sprintf("%d known, %d raw", known, raw)})
		}
	}
	return rows
}

// histCell is a duration role's mean and bucket-estimated p90, in ms.
func histCell(s *servermetrics.Summary, role servermetrics.Role) string {
	m, _, _, ok := s.Mean(role)
	if !ok {
		return "-"
	}
	out := fmtNum(m * 1000)
	if h, _, ok := s.Histogram(role); ok {
		if q, ok := h.Quantile(0.9); ok {
			if len(h.Buckets) > 0 && q <= h.Buckets[0].Le {
				// In the first bucket: all a bucket estimate can say.
				out += " / ≤" + fmtNum(h.Buckets[0].Le*1000) + "*"
			} else {
				out += " / " + fmtNum(q*1000) + "*"
			}
		}
	}
	return out
}

// gaugeCell is a gauge role's min/mean/max (times scale: 100 for a share
// in percent).
func gaugeCell(s *servermetrics.Summary, role servermetrics.Role, scale float64) string {
	g, _, ok := s.Gauge(role)
	if !ok {
		return "-"
	}
	out := fmt.Sprintf("%s/%s/%s", fmtNum(g.Min*scale), fmtNum(g.Mean*scale), fmtNum(g.Max*scale))
	if scale == 100 {
		out += "%"
	}
	return out
}

// prefixCell is the prefix-cache hit rate over the window: hits over
// queries, or the server's own rate gauge.
func prefixCell(s *servermetrics.Summary) string {
	var hits, queries float64
	for _, f := range s.Families {
		for _, se := range f.Series {
			if se.Delta == nil {
				continue
			}
			switch se.Role {
			case servermetrics.RolePrefixHits:
				hits += *se.Delta
			case servermetrics.RolePrefixQueries:
				queries += *se.Delta
			}
		}
	}
	if queries > 0 {
		return fmt.Sprintf("%.1f%%", 100*hits/queries)
	}
	if g, _, ok := s.Gauge(servermetrics.RolePrefixHitRate); ok {
		return fmt.Sprintf("%.1f%% (gauge)", 100*g.Mean)
	}
	return "-"
}

func ladderTitle(tr *TargetResult) string {
	best, ok := tr.Ladder.HighestHeld()
	held := "none" + whyNoneHeld(tr.Ladder)
	if ok {
		held = fmtNum(best) + " req/s"
	}
	return fmt.Sprintf("QPS ladder: %s (highest rate held with p95 %s ≤ %v: %s; latency from the intended send)", tr.Name, tr.Ladder.Config.Metric, tr.Ladder.Config.HighWater, held)
}

// whyNoneHeld says, after "none", why a ladder that held no rate did not:
// what its first step met.
func whyNoneHeld(l *LadderTrace) string {
	if len(l.Steps) == 0 {
		return ""
	}
	s := l.Steps[0]
	at := fmt.Sprintf("the first step, at %s req/s,", fmtNum(s.Rate))
	switch {
	case s.Action == End:
		return fmt.Sprintf(": the run ended within the first step (%v of %v); run for more than a step", s.Length, l.Config.Step)
	case s.P95Failed:
		return ": " + at + " failed (failures filled its p95)"
	case !s.P95Known || s.Completed == 0:
		return ": " + at + " had no request that gave its latency"
	case s.P95 > l.Config.HighWater:
		return fmt.Sprintf(": %s already had p95 %s ms > %v (raise the high-water mark, or lower the start and floor rates)", at, ms(float64(s.P95)), l.Config.HighWater)
	}
	return ""
}

// ladderRows is the ladder's table: per step, the p95 the decision read at
// the step's end (with the requests then in flight at their age), the
// decision, and the step's final p95 once all its requests ended.
func ladderRows(l *LadderTrace) [][]string {
	rows := [][]string{{"step", "start s", "rate /s", "sent", "done", "errors", "read p95 ms", "in flight", "action", "next /s", "p95 ms"}}
	p95 := func(d Duration, known, failed bool) string {
		switch {
		case known:
			return ms(float64(d))
		case failed:
			return "failed"
		}
		return "-"
	}
	for _, s := range l.Steps {
		read, inFlight, next := p95(s.Read.P95, s.Read.Known, s.Read.Failed), strconv.Itoa(s.Read.InFlight), fmtNum(s.Next)
		if s.Action == End {
			read, inFlight, next = "-", "-", "-"
		}
		rows = append(rows, []string{strconv.Itoa(s.Index), fmtNum(s.Start.D().Seconds()), fmtNum(s.Rate), strconv.Itoa(s.Sent),
			strconv.Itoa(s.Completed), strconv.Itoa(s.Errors), read, inFlight, string(s.Action), next,
			p95(s.P95, s.P95Known, s.P95Failed)})
	}
	return rows
}

func slaRows(rep *stats.Report) [][]string {
	rows := [][]string{{"target", "sla", "n", "measured", "threshold", "deviation", "result", "without cold", "cold share"}}
	for i := range rep.SLAs {
		rows = append(rows, slaRow(&rep.SLAs[i]))
	}
	return rows
}

// intendedRows gives, per target, TTFT and total latency measured from
// the intended send time (coordinated-omission corrected), to read beside
// the reference table's figures from the actual send, and the schedule
// lag that separates them. Targets without an intended send are left out.
func (r *Result) intendedRows() [][]string {
	rows := [][]string{{"target", "TTFT ms", "TTFT p50/p95/p99", "total ms", "total p50/p95/p99", "lag p50/p99 ms"}}
	for _, tr := range r.Targets {
		ttft, e2e := tr.Dist(latency.TTFTIntended, "", ""), tr.Dist(latency.E2EIntended, "", "")
		if e2e.Count() == 0 {
			continue
		}
		if !tr.Stream {
			ttft = &stats.Dist{} // a whole body has no first token
		}
		lag := tr.Dist(latency.ScheduleLag, "", "")
		lagS := "-"
		if lag.Count() > 0 {
			lagS = ms(lag.Quantile(0.5)) + " / " + ms(lag.Quantile(0.99))
		}
		m := saturatedMark(tr)
		rows = append(rows, []string{tr.Name, meanSD(ttft) + m, pcts(ttft) + m, meanSD(e2e) + m, pcts(e2e) + m, lagS + m})
	}
	return rows
}

// loadTitle heads the load table; it says what the table's rates divide
// by.
const loadTitle = "Load and generator (sent /s, ok /s and tok/s over the wall time: from the start to the last response)"

// loadRows returns the load table. Its rates are throughputs (count /
// duration), each over the target's wall time (TargetResult.Wall):
// sent /s the requests sent, ok /s the successful ones, tok/s their output
// tokens; one denominator, so ok /s never exceeds sent /s. offered /s is
// the open loop's scheduled rate. The achieved send rate over the span of
// the sends (TargetResult.SendRate), which the shortfall warning compares
// with the offered rate, is in the CSV and the JSON, not here.
func (r *Result) loadRows() [][]string {
	rows := [][]string{{"target", "load", "sent", "wall s", "offered /s", "sent /s", "ok /s", "tok/s", "lag p50/p99 ms", "late", "client CPU", "machine CPU"}}
	for _, tr := range r.Targets {
		c := tr.Counts()
		wall := tr.Wall.D().Seconds()
		sentRate, okRate, tokRate := "-", "-", "-"
		if wall > 0 {
			sentRate = fmtNum(float64(tr.Sent) / wall)
			okRate, tokRate = fmtNum(float64(c.Requests-c.Failed)/wall), fmtNum(float64(c.OutputTokens)/wall)
		}
		lag := tr.Dist(latency.ScheduleLag, "", "")
		lagS := "-"
		if lag.Count() > 0 {
			lagS = ms(lag.Quantile(0.5)) + " / " + ms(lag.Quantile(0.99))
		}
		offered := "-"
		if tr.OfferedRate > 0 {
			offered = fmtNum(tr.OfferedRate)
		}
		cpu, mcpu := "-", "-"
		if tr.CPU >= 0 {
			cpu = fmt.Sprintf("%.0f%%", 100*tr.CPU)
		}
		if tr.MachineCPU >= 0 {
			mcpu = fmt.Sprintf("%.0f%%", 100*tr.MachineCPU)
		}
		load, _, _ := strings.Cut(tr.Load, " (") // the details are in the run's description
		m := saturatedMark(tr)
		rows = append(rows, []string{tr.Name, load, strconv.FormatInt(tr.Sent, 10), fmtNum(wall), offered, sentRate + m, okRate, tokRate,
			lagS + m, strconv.FormatInt(tr.Late, 10) + m, cpu, mcpu})
	}
	return rows
}

// saturatedMark is the mark of the figures a saturated client set.
func saturatedMark(tr *TargetResult) string {
	if tr.Saturated != "" {
		return " *"
	}
	return ""
}

// saturatedBanners returns a line for each target whose client was the
// bottleneck, shown before the figures.
func (r *Result) saturatedBanners() []string {
	var out []string
	for _, tr := range r.Targets {
		if tr.Saturated != "" {
			out = append(out, fmt.Sprintf("CLIENT SATURATED (%s): %s. The load generator, not the target, set the figures marked *"+
				" (sent /s, schedule lag, late, and the figures from the intended send); rerun at a lower rate or on more machines",
				tr.Name, tr.Saturated))
		}
	}
	return out
}

// notes returns the warnings and failures, one line each.
func (r *Result) notes() []string {
	var out []string
	for _, tr := range r.Targets {
		for _, wn := range tr.Warnings {
			out = append(out, fmt.Sprintf("WARNING (%s): %s", tr.Name, wn))
		}
		if tr.Fatal != "" {
			out = append(out, fmt.Sprintf("FAILED (%s): %s", tr.Name, tr.Fatal))
		}
	}
	return out
}

func (r *Result) renderSummary(w io.Writer, md, detail bool) error {
	ew := &errWriter{w: w}
	rep, err := r.Report()
	if err != nil {
		return err
	}
	if md {
		fmt.Fprintf(ew, "# cloudinfer bench\n\n")
	}
	r.describe(ew)
	if bs := r.saturatedBanners(); len(bs) > 0 {
		for _, b := range bs {
			if md {
				b = "**" + b + "**"
			}
			fmt.Fprintf(ew, "%s\n\n", b)
		}
	}
	r.ReferenceTable(ew, md)
	for _, s := range r.sections(rep) {
		if md {
			fmt.Fprintf(ew, "## %s\n\n", s.Title)
		} else {
			fmt.Fprintf(ew, "%s\n", s.Title)
		}
		(&table{w: ew, md: md, rows: s.Rows}).flush()
	}
	for _, n := range r.notes() {
		fmt.Fprintln(ew, n)
	}
	if detail {
		fmt.Fprintln(ew)
		f := FormatText
		if md {
			f = FormatMarkdown
		}
		rep.SLAs = nil // shown above
		if err := RenderReport(ew, rep, f); err != nil {
			return err
		}
	}
	return ew.err
}

// notRunTargets names the plan's targets that have no result: ", not run:
// a, b", or "" when every one has.
func notRunTargets(r *Result) string {
	have := map[string]bool{}
	for _, tr := range r.Targets {
		have[tr.Name] = true
	}
	var missing []string
	for _, t := range r.Plan.Targets {
		if !have[t.Name] {
			missing = append(missing, t.Name)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return "; not run: " + strings.Join(missing, ", ")
}

// networks describes the targets' network impairments: one part when
// every target had the same, else one per target that had one.
func networks(ts []Target) []string {
	same := true
	for _, t := range ts {
		same = same && t.Network == ts[0].Network
	}
	if same {
		if len(ts) == 0 || ts[0].Network == "" {
			return nil
		}
		return []string{"network " + ts[0].Network}
	}
	var out []string
	for _, t := range ts {
		if t.Network != "" {
			out = append(out, t.Name+" over network "+t.Network)
		}
	}
	return out
}

// payloads describes what the plan's requests sent: "N-token prompt" when
// every request sent a generated prompt of N tokens; when what was sent
// differs between a mix's classes (a class's payload replaces its
// target's) or between targets, the prompts' range ("prompt per class:
// 64–2048 tokens") or the kinds sent ("payload per class: 64-token
// prompt, raw body"); "" when every request sent the same given prompt,
// or raw bodies.
func payloads(p *Plan) string {
	var classes []*Class
	if p.Mix != nil {
		for i := range p.Mix.Classes {
			classes = append(classes, &p.Mix.Classes[i])
		}
	} else {
		classes = []*Class{nil}
	}
	var sent [][]string // by target, by class: what its requests sent
	tokens := map[int]bool{}
	given, raw := false, false
	for i := range p.Targets {
		t := &p.Targets[i]
		var row []string
		for _, c := range classes {
			pl, own := &t.Payload, true
			if c != nil && c.Payload != nil {
				pl, own = c.Payload, false
			}
			// A result's plan keeps no target's inline body, but its
			// action still says the target sent one; a class's inline
			// body is there, redacted.
			switch {
			case pl.File != "" || pl.Body != "" || len(pl.body) > 0 || own && t.Action == cloudreq.ActionInvoke:
				raw = true
				row = append(row, "raw")
			case pl.Prompt != "":
				given = true
				row = append(row, "given")
			default:
				n := cmp.Or(pl.PromptTokens, DefaultPromptTokens)
				tokens[n] = true
				row = append(row, strconv.Itoa(n))
			}
		}
		sent = append(sent, row)
	}
	ns := slices.Sorted(maps.Keys(tokens))
	kinds := len(ns)
	if given {
		kinds++
	}
	if raw {
		kinds++
	}
	switch {
	case kinds == 0:
		return ""
	case kinds == 1 && len(ns) == 1:
		return fmt.Sprintf("%d-token prompt", ns[0])
	case kinds == 1:
		return "" // the same given prompt, or raw bodies
	}
	byClass, byTarget := false, false
	for _, row := range sent {
		byClass = byClass || slices.ContainsFunc(row, func(s string) bool { return s != row[0] })
		byTarget = byTarget || !slices.Equal(row, sent[0])
	}
	scope := "per class"
	switch {
	case byTarget && byClass:
		scope = "per target and class"
	case byTarget:
		scope = "per target"
	}
	if !given && !raw {
		return fmt.Sprintf("prompt %s: %d–%d tokens", scope, ns[0], ns[len(ns)-1])
	}
	var what []string
	switch len(ns) {
	case 0:
	case 1:
		what = append(what, fmt.Sprintf("%d-token prompt", ns[0]))
	default:
		what = append(what, fmt.Sprintf("%d–%d-token prompts", ns[0], ns[len(ns)-1]))
	}
	if given {
		what = append(what, "given prompt")
	}
	if raw {
		what = append(what, "raw body")
	}
	return "payload " + scope + ": " + strings.Join(what, ", ")
}

// streaming says which targets read their responses as streams:
// "streaming" when every one did, else "streaming: " and their names; ""
// when none did.
func streaming(ts []Target) string {
	var names []string
	for _, t := range ts {
		if t.Stream {
			names = append(names, t.Name)
		}
	}
	switch len(names) {
	case 0:
		return ""
	case len(ts):
		return "streaming"
	}
	return "streaming: " + strings.Join(names, ", ")
}

// describe writes the one-line description of the run.
func (r *Result) describe(w io.Writer) {
	if r.Plan == nil {
		return
	}
	p := r.Plan
	var parts []string
	if r.Interrupted {
		parts = append(parts, "INTERRUPTED (partial result"+notRunTargets(r)+")")
	}
	parts = append(parts, p.Load.String())
	if p.Limits.Requests > 0 {
		parts = append(parts, fmt.Sprintf("%d requests per target", p.Limits.Requests))
	}
	if p.Limits.Duration > 0 {
		parts = append(parts, fmt.Sprintf("at most %v per target", p.Limits.Duration))
	}
	if p.Limits.Warmup > 0 {
		parts = append(parts, fmt.Sprintf("%d warm-up left out", p.Limits.Warmup))
	}
	if s := payloads(p); s != "" {
		parts = append(parts, s)
	}
	if s := streaming(p.Targets); s != "" {
		parts = append(parts, s)
	}
	parts = append(parts, networks(p.Targets)...)
	hosts := ""
	if len(r.Hosts) > 1 {
		hosts = fmt.Sprintf(" — merged from %d machines", len(r.Hosts))
	}
	if len(r.Shards) > 0 {
		var spread Duration
		for _, tr := range r.Targets {
			spread = max(spread, tr.StartSpread)
		}
		hosts += fmt.Sprintf(" (%d shards, their starts %v apart)", len(r.Shards), spread.D().Round(time.Microsecond))
	}
	if r.Shard != nil {
		hosts += fmt.Sprintf(" — shard %d of %d of plan %s", r.Shard.Index, r.Shard.Count, r.Shard.Plan)
	}
	fmt.Fprintf(w, "%s%s\n\n", strings.Join(parts, ", "), hosts)
}

func (r *Result) classRows() [][]string {
	rows := [][]string{{"target", "class", "requests", "share", "failed", "TTFT ms", "total ms", "total p50/p95/p99"}}
	for _, tr := range r.Targets {
		total := tr.Counts().Requests
		for _, c := range tr.Classes() {
			if c == "" {
				continue
			}
			cc := tr.Recorder.Counts(stats.Filter{Endpoint: tr.Name, Class: c})
			share := "-"
			if total > 0 {
				share = fmt.Sprintf("%.1f%%", 100*float64(cc.Requests)/float64(total))
			}
			ttft := &stats.Dist{}
			if tr.Stream {
				ttft = tr.Dist(latency.TTFT, c, "")
			}
			e2e := tr.Dist(latency.E2E, c, "")
			rows = append(rows, []string{tr.Name, c, strconv.FormatInt(cc.Requests, 10), share,
				strconv.FormatInt(cc.Failed, 10), meanSD(ttft), meanSD(e2e), pcts(e2e)})
		}
	}
	return rows
}

func (r *Result) errorRows() [][]string {
	rows := [][]string{{"target", "code", "requests", "share", "first message"}}
	for _, tr := range r.Targets {
		c := tr.Counts()
		for _, code := range slices.Sorted(maps.Keys(c.Errors)) {
			msg := tr.ErrorExamples[code]
			if len(msg) > 120 {
				msg = msg[:120] + "…"
			}
			rows = append(rows, []string{tr.Name, code, strconv.FormatInt(c.Errors[code], 10),
				fmt.Sprintf("%.1f%%", 100*float64(c.Errors[code])/float64(max(c.Requests, 1))), msg})
		}
	}
	return rows
}

// coldRows compares cold and warm requests, and reports the cold-start
// overhead; nil when no target saw a cold start.
func (r *Result) coldRows() [][]string {
	rows := [][]string{{"target", "start", "requests", "TTFT ms", "total ms", "total p95 ms", "cold-start overhead ms"}}
	for _, tr := range r.Targets {
		cold := tr.Recorder.Counts(stats.Filter{Endpoint: tr.Name, Starts: stats.StartsCold})
		if cold.Requests == 0 {
			continue
		}
		for _, st := range []stats.Starts{stats.StartsWarm, stats.StartsCold} {
			c := tr.Recorder.Counts(stats.Filter{Endpoint: tr.Name, Starts: st})
			ttft := &stats.Dist{}
			if tr.Stream {
				ttft = tr.Dist(latency.TTFT, "", st)
			}
			e2e := tr.Dist(latency.E2E, "", st)
			p95 := "-"
			if e2e.Count() > 0 {
				p95 = ms(e2e.Quantile(0.95))
			}
			over := "-"
			if st == stats.StartsCold {
				over = meanSD(tr.Dist(latency.ColdStart, "", st))
			}
			rows = append(rows, []string{tr.Name, string(st), strconv.FormatInt(c.Requests, 10), meanSD(ttft), meanSD(e2e), p95, over})
		}
	}
	return rows
}

// slaRow is an SLA result's row of the summary: its target, then
// slaCells with the SLA labelled without its endpoint.
func slaRow(s *stats.SLAResult) []string {
	l := s.SLA
	l.Endpoint = ""
	return append([]string{s.SLA.Endpoint}, slaCells(s, l.Label())...)
}

func (r *Result) tagRows() [][]string {
	rows := [][]string{{"target", "dimension", "value", "requests", "share", "failed", "total p95 ms"}}
	for _, tr := range r.Targets {
		total := tr.Counts().Requests
		for _, dim := range slices.Sorted(maps.Keys(tr.Tags)) {
			vals := tr.Tags[dim]
			keys := slices.SortedFunc(maps.Keys(vals), func(a, b string) int {
				if d := vals[b].Count - vals[a].Count; d != 0 {
					return int(max(min(d, 1), -1))
				}
				return strings.Compare(a, b)
			})
			for _, v := range keys {
				ts := vals[v]
				p95 := "-"
				if ts.E2E != nil && ts.E2E.Count() > 0 {
					p95 = ms(ts.E2E.Quantile(0.95))
				}
				rows = append(rows, []string{tr.Name, dim, v, strconv.FormatInt(ts.Count, 10),
					fmt.Sprintf("%.1f%%", 100*float64(ts.Count)/float64(max(total, 1))), strconv.FormatInt(ts.Errors, 10), p95})
			}
		}
	}
	return rows
}

// turnsTitle heads the sessions model's table by turn.
const turnsTitle = "Turns (sessions: turn k's prompt holds the conversation so far; a TTFT that grows less than the prompt shows a prefix cache)"

// turnRows is the sessions model's figures by turn index.
func (r *Result) turnRows() [][]string {
	rows := [][]string{{"target", "turn", "requests", "failed", "prompt tokens", "TTFT ms", "TTFT p50/p95/p99", "total ms", "total p50/p95/p99"}}
	for _, tr := range r.Targets {
		for _, ts := range tr.Turns {
			if ts == nil {
				continue
			}
			rows = append(rows, []string{tr.Name, strconv.Itoa(ts.Turn), strconv.FormatInt(ts.Count, 10), strconv.FormatInt(ts.Errors, 10),
				fmtNum(ts.MeanPromptTokens()), orEmpty(ts.TTFT, meanSD), orEmpty(ts.TTFT, pcts), orEmpty(ts.E2E, meanSD), orEmpty(ts.E2E, pcts)})
		}
	}
	return rows
}

// orEmpty formats d with f, or "-" when d is nil.
func orEmpty(d *stats.Dist, f func(*stats.Dist) string) string {
	if d == nil {
		return "-"
	}
	return f(d)
}

// sessionRows counts the stateful sessions opened and closed.
func (r *Result) sessionRows() [][]string {
	rows := [][]string{{"target", "opened", "closed"}}
	for _, tr := range r.Targets {
		if tr.SessionsOpened > 0 || tr.SessionsClosed > 0 {
			rows = append(rows, []string{tr.Name, strconv.FormatInt(tr.SessionsOpened, 10), strconv.FormatInt(tr.SessionsClosed, 10)})
		}
	}
	return rows
}

// renderCSV writes the latency report's tidy CSV, then load and ladder
// rows in the same columns.
func (r *Result) renderCSV(w io.Writer) error {
	rep, err := r.Report()
	if err != nil {
		return err
	}
	if err := RenderReport(w, rep, FormatCSV); err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, tr := range r.Targets {
		put := func(table, name, stat, value, unit string) {
			_ = cw.Write([]string{table, tr.Name, "", "", name, stat, value, unit})
		}
		put("load", "sent", "count", strconv.FormatInt(tr.Sent, 10), "requests")
		put("load", "late", "count", strconv.FormatInt(tr.Late, 10), "requests")
		put("load", "wall", "duration", f(tr.Wall.D().Seconds()), "s")
		if tr.OfferedRate > 0 {
			put("load", "offered", "rate", f(tr.OfferedRate), "1/s")
		}
		if tr.SendRate > 0 {
			put("load", "achieved", "rate", f(tr.SendRate), "1/s")
		}
		if tr.CPU >= 0 {
			put("load", "client-cpu", "share", f(tr.CPU), "")
		}
		if tr.MachineCPU >= 0 {
			put("load", "machine-cpu", "share", f(tr.MachineCPU), "")
		}
		if tr.GCs > 0 {
			put("load", "client-gc", "count", strconv.FormatInt(tr.GCs, 10), "collections")
			put("load", "client-gc-pause", "max", f(float64(tr.GCPauseMax.D())/1e6), "ms")
		}
		if tr.Saturated != "" {
			put("load", "saturated", "reason", tr.Saturated, "")
		}
		if tr.Ladder != nil {
			for _, s := range tr.Ladder.Steps {
				n := "step-" + strconv.Itoa(s.Index)
				put("ladder", n, "start", f(s.Start.D().Seconds()), "s")
				put("ladder", n, "rate", f(s.Rate), "1/s")
				put("ladder", n, "sent", strconv.Itoa(s.Sent), "requests")
				if s.P95Known {
					put("ladder", n, "p95", f(float64(s.P95)/1e6), "ms")
				}
				put("ladder", n, "action", string(s.Action), "")
			}
			if best, ok := tr.Ladder.HighestHeld(); ok {
				put("ladder", "highest-held", "rate", f(best), "1/s")
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return len(p), nil
	}
	n, err := e.w.Write(p)
	if err != nil {
		e.err = err
	}
	return n, nil
}

func writeCSV(w io.Writer, rows [][]string) error {
	cw := csv.NewWriter(w)
	_ = cw.WriteAll(rows)
	return cw.Error()
}
