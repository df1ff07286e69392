package bench

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/latency/stats"
)

// RenderReport writes a latency report in format f: FormatText, an
// aligned text table per group (values as "428 ± 31", milliseconds unless
// noted), then the LogNormal fits and the SLAs; FormatMarkdown, the same
// as GitHub-flavoured Markdown tables; FormatCSV, a tidy (long) table, one
// value per row; FormatJSON, the Report as indented JSON. Other formats
// are an ERR_INVALID_PARAM error.
func RenderReport(w io.Writer, rep *stats.Report, f Format) error {
	switch f {
	case FormatText:
		return renderReportTable(w, rep, false)
	case FormatMarkdown:
		return renderReportTable(w, rep, true)
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	case FormatCSV:
		return renderReportCSV(w, rep)
	default:
		return errcodes.Errorf(errcodes.InvalidParam, "latency: unknown report format %q (text, json, csv, markdown)", f)
	}
}

// startLabel names a group's start kind. Failed requests have none; a
// group without one that holds successes (samples recorded without a
// verdict) is "unclassified".
func startLabel(g *stats.GroupReport) string {
	switch {
	case g.Start != "":
		return string(g.Start)
	case g.Counts.Failed < g.Counts.Requests:
		return "unclassified"
	}
	return "failed"
}

func groupTitle(g *stats.GroupReport) string {
	ep := g.Endpoint
	if ep == "" {
		ep = "(endpoint)"
	}
	t := ep
	if g.Class != "" {
		t += " class=" + g.Class
	}
	return t + " start=" + startLabel(g)
}

func groupLine(g *stats.GroupReport) string {
	c := &g.Counts
	s := fmt.Sprintf("requests %d, ok %d, failed %d", c.Requests, c.Requests-c.Failed, c.Failed)
	if len(c.Errors) > 0 {
		s += " ("
		for i, k := range slices.Sorted(maps.Keys(c.Errors)) {
			if i > 0 {
				s += ", "
			}
			s += fmt.Sprintf("%s %d", k, c.Errors[k])
		}
		s += ")"
	}
	if len(c.Reasons) > 0 {
		reasons := make(map[string]int64, len(c.Reasons))
		for k, v := range c.Reasons {
			reasons[string(k)] = v
		}
		s += "; reasons: "
		for i, k := range slices.Sorted(maps.Keys(reasons)) {
			if i > 0 {
				s += ", "
			}
			s += fmt.Sprintf("%s %d", k, reasons[k])
		}
	}
	s += fmt.Sprintf("; connection-cold %d, retried %d", c.ConnectionCold, c.Retried)
	s += fmt.Sprintf("; %s req/s, goodput %s req/s, %s tok/s", fmtNum(g.RequestRate), fmtNum(g.Goodput), fmtNum(g.TokenRate))
	if g.TokenSource != "" {
		s += "; N_out " + g.TokenSource
	}
	return s
}

func renderReportTable(w io.Writer, rep *stats.Report, md bool) error {
	ew := &errWriter{w: w}
	row := func(tw io.Writer, cells ...string) {
		if md {
			fmt.Fprintf(tw, "| %s |\n", strings.Join(cells, " | "))
		} else {
			fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t") // AlignRight pads tab-terminated cells only
		}
	}
	rule := func(tw io.Writer, n int) {
		if md {
			fmt.Fprintln(tw, "|"+strings.Repeat("---|", n))
		}
	}
	table := func(f func(tw io.Writer)) {
		if md {
			f(ew)
			fmt.Fprintln(ew)
			return
		}
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
		f(tw)
		_ = tw.Flush()
		fmt.Fprintln(ew)
	}
	heading := func(s string) {
		if md {
			fmt.Fprintf(ew, "### %s\n\n", s)
		} else {
			fmt.Fprintln(ew, s)
		}
	}
	if md {
		fmt.Fprintf(ew, "## Latency report (%ss)\n\n", fmtNum(rep.DurationSeconds))
	} else {
		fmt.Fprintf(ew, "Latency report over %ss (ms unless noted)\n\n", fmtNum(rep.DurationSeconds))
	}
	for i := range rep.Groups {
		g := &rep.Groups[i]
		heading(groupTitle(g))
		if md {
			fmt.Fprintf(ew, "%s\n\n", groupLine(g))
		} else {
			fmt.Fprintf(ew, "  %s\n", groupLine(g))
		}
		if len(g.Metrics) > 0 {
			table(func(tw io.Writer) {
				hdr := []string{"metric", "n", "mean ± sd", "min", "p50", "p90", "p95", "p99", "p99.9", "max"}
				row(tw, hdr...)
				rule(tw, len(hdr))
				for _, m := range g.Metrics {
					name := m.Metric.String()
					if m.Unit != "ms" {
						name += " (" + m.Unit + ")"
					}
					row(tw, name, strconv.FormatUint(m.Count, 10), fmtMeanSD(m.Mean, m.SD), fmtNum(m.Min), fmtNum(m.P50),
						fmtNum(m.P90), fmtNum(m.P95), fmtNum(m.P99), fmtNum(m.P999), fmtNum(m.Max))
				}
			})
		}
		if len(g.Metrics) == 0 && len(g.Fits) == 0 && !md {
			fmt.Fprintln(ew)
		}
		if len(g.Fits) > 0 {
			table(func(tw io.Writer) {
				hdr := []string{"lognormal fit", "n", "μ ln(ms)", "σ", "fitted p99", "observed p99"}
				row(tw, hdr...)
				rule(tw, len(hdr))
				for _, f := range g.Fits {
					row(tw, f.Phase, strconv.FormatUint(f.N, 10), strconv.FormatFloat(f.Mu, 'f', 3, 64), strconv.FormatFloat(f.Sigma, 'f', 3, 64), fmtNum(f.FittedP99), fmtNum(f.ObservedP99))
				}
			})
		}
	}
	if len(rep.SLAs) > 0 {
		heading("SLAs")
		if !md {
			fmt.Fprintln(ew)
		}
		table(func(tw io.Writer) {
			hdr := []string{"sla", "n", "measured", "threshold", "deviation", "result", "without cold", "cold share"}
			row(tw, hdr...)
			rule(tw, len(hdr))
			for _, r := range rep.SLAs {
				row(tw, slaCells(&r, r.SLA.Label())...)
			}
		})
	}
	return ew.err
}

// slaCells are an SLA result's cells under label: n, measured,
// threshold, deviation, result, the value without the cold requests and
// their share of the deviation.
func slaCells(r *stats.SLAResult, label string) []string {
	div := 1.0
	if r.SLA.Metric.Info().Unit == latency.Nanoseconds {
		div = 1e6
	}
	th := float64(r.SLA.Threshold) / div
	res := "FAIL"
	if r.Pass {
		res = "pass"
	}
	if r.NoData {
		return []string{label, "0", "-", fmtNum(th), "-", "no data", "-", "-"}
	}
	woc, share := "-", "-"
	if a := r.Attribution; a != nil {
		if a.ColdCount > 0 {
			if a.WithoutColdCount > 0 {
				woc = fmtNum(a.WithoutCold / div)
			}
			if !r.Pass {
				share = strconv.FormatFloat(a.ColdShare*100, 'f', 0, 64) + "%"
			}
		}
	}
	return []string{label, strconv.FormatUint(r.Count, 10), fmtNum(r.Measured / div), fmtNum(th),
		fmt.Sprintf("%+.1f%%", r.Deviation*100), res, woc, share}
}

func renderReportCSV(w io.Writer, rep *stats.Report) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"table", "endpoint", "class", "start", "name", "stat", "value", "unit"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for i := range rep.Groups {
		g := &rep.Groups[i]
		base := []string{g.Endpoint, g.Class, startLabel(g)}
		put := func(table, name, stat, value, unit string) {
			_ = cw.Write(append([]string{table}, append(append([]string{}, base...), name, stat, value, unit)...))
		}
		c := &g.Counts
		put("counts", "requests", "count", strconv.FormatInt(c.Requests, 10), "requests")
		put("counts", "failed", "count", strconv.FormatInt(c.Failed, 10), "requests")
		for _, k := range slices.Sorted(maps.Keys(c.Errors)) {
			put("counts", "error", k, strconv.FormatInt(c.Errors[k], 10), "requests")
		}
		for _, k := range slices.Sorted(maps.Keys(c.Reasons)) {
			put("counts", "reason", string(k), strconv.FormatInt(c.Reasons[k], 10), "requests")
		}
		put("counts", "good", "count", strconv.FormatInt(c.Good, 10), "requests")
		put("counts", "connection-cold", "count", strconv.FormatInt(c.ConnectionCold, 10), "requests")
		put("counts", "retried", "count", strconv.FormatInt(c.Retried, 10), "requests")
		put("counts", "output-tokens", "sum", strconv.FormatInt(c.OutputTokens, 10), "tokens")
		put("rates", "requests", "rate", f(g.RequestRate), "1/s")
		put("rates", "goodput", "rate", f(g.Goodput), "1/s")
		put("rates", "throughput", "rate", f(g.TokenRate), "tokens/s")
		for _, m := range g.Metrics {
			n := m.Metric.String()
			put("metric", n, "count", strconv.FormatUint(m.Count, 10), "")
			for _, sv := range []struct {
				s string
				v float64
			}{{"mean", m.Mean}, {"sd", m.SD}, {"min", m.Min}, {"p50", m.P50}, {"p90", m.P90}, {"p95", m.P95},
				{"p99", m.P99}, {"p99.9", m.P999}, {"max", m.Max}} {
				put("metric", n, sv.s, f(sv.v), m.Unit)
			}
		}
		for _, ft := range g.Fits {
			put("fit", ft.Phase, "n", strconv.FormatUint(ft.N, 10), "")
			put("fit", ft.Phase, "mu", f(ft.Mu), "ln(ms)")
			put("fit", ft.Phase, "sigma", f(ft.Sigma), "")
			put("fit", ft.Phase, "fitted_p99", f(ft.FittedP99), "ms")
			put("fit", ft.Phase, "observed_p99", f(ft.ObservedP99), "ms")
		}
	}
	for _, r := range rep.SLAs {
		unit, div := string(latency.Tokens), 1.0
		if r.SLA.Metric.Info().Unit == latency.Nanoseconds {
			unit, div = "ms", 1e6
		}
		put := func(stat, value, u string) {
			_ = cw.Write([]string{"sla", r.SLA.Endpoint, r.SLA.Class, string(r.SLA.Starts), r.SLA.Label(), stat, value, u})
		}
		put("count", strconv.FormatUint(r.Count, 10), "")
		put("threshold", f(float64(r.SLA.Threshold)/div), unit)
		if r.NoData {
			put("result", "no data", "")
			continue
		}
		put("measured", f(r.Measured/div), unit)
		put("deviation", f(r.Deviation*100), "%")
		put("pass", strconv.FormatBool(r.Pass), "")
		if a := r.Attribution; a != nil {
			put("cold_count", strconv.FormatUint(a.ColdCount, 10), "")
			if a.WithoutColdCount > 0 {
				put("without_cold", f(a.WithoutCold/div), unit)
			}
			put("cold_share", f(a.ColdShare*100), "%")
		}
	}
	cw.Flush()
	return cw.Error()
}
