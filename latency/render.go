package latency

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/cloudinfer/cloudinfer/errcodes"
)

// Format is a report rendering.
type Format string

// Formats.
const (
	// FormatText is an aligned text table, values as "428 ± 31" (ms).
	FormatText Format = "text"
	// FormatJSON is the Report as indented JSON.
	FormatJSON Format = "json"
	// FormatCSV is a tidy (long) table: one value per row.
	FormatCSV Format = "csv"
	// FormatMarkdown is GitHub-flavoured Markdown tables.
	FormatMarkdown Format = "markdown"
)

// Render writes the report in the given format.
func (rep *Report) Render(w io.Writer, f Format) error {
	switch f {
	case FormatText:
		return rep.renderTable(w, false)
	case FormatMarkdown:
		return rep.renderTable(w, true)
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	case FormatCSV:
		return rep.renderCSV(w)
	default:
		return errcodes.Errorf(errcodes.InvalidParam, "latency: unknown report format %q (text, json, csv, markdown)", f)
	}
}

// decimals returns how many decimals to print a value with, in the
// reference style: 428, 28.4, 0.85, 0.032.
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

func num(v float64, dec int) string { return strconv.FormatFloat(v, 'f', dec, 64) }

// MeanSD formats mean ± sd with the mean's precision: "428 ± 31", "28.4 ± 2.1".
func MeanSD(mean, sd float64) string {
	d := decimals(mean)
	return num(mean, d) + " ± " + num(sd, d)
}

func val(v float64) string { return num(v, decimals(v)) }

// startLabel names a group's start kind. Failed requests have none; a
// group without one that holds successes (samples recorded without a
// verdict) is "unclassified".
func startLabel(g *GroupReport) string {
	switch {
	case g.Start != "":
		return string(g.Start)
	case g.Counts.Failed < g.Counts.Requests:
		return "unclassified"
	}
	return "failed"
}

func groupTitle(g *GroupReport) string {
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

func groupLine(g *GroupReport) string {
	c := &g.Counts
	s := fmt.Sprintf("requests %d, ok %d, failed %d", c.Requests, c.Requests-c.Failed, c.Failed)
	if len(c.Errors) > 0 {
		s += " ("
		for i, k := range sortedKeys(c.Errors) {
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
		for i, k := range sortedKeys(reasons) {
			if i > 0 {
				s += ", "
			}
			s += fmt.Sprintf("%s %d", k, reasons[k])
		}
	}
	s += fmt.Sprintf("; connection-cold %d, retried %d", c.ConnectionCold, c.Retried)
	s += fmt.Sprintf("; %s req/s, goodput %s req/s, %s tok/s", val(g.RequestRate), val(g.Goodput), val(g.TokenRate))
	if g.TokenSource != "" {
		s += "; N_out " + g.TokenSource
	}
	return s
}

func (rep *Report) renderTable(w io.Writer, md bool) error {
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
		fmt.Fprintf(ew, "## Latency report (%ss)\n\n", val(rep.DurationSeconds))
	} else {
		fmt.Fprintf(ew, "Latency report over %ss (ms unless noted)\n\n", val(rep.DurationSeconds))
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
					row(tw, name, strconv.FormatUint(m.Count, 10), MeanSD(m.Mean, m.SD), val(m.Min), val(m.P50),
						val(m.P90), val(m.P95), val(m.P99), val(m.P999), val(m.Max))
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
					row(tw, f.Phase, strconv.FormatUint(f.N, 10), num(f.Mu, 3), num(f.Sigma, 3), val(f.FittedP99), val(f.ObservedP99))
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
				row(tw, slaCells(&r)...)
			}
		})
	}
	return ew.err
}

func slaCells(r *SLAResult) []string {
	div := 1.0
	if r.SLA.Metric.Info().Unit == Nanoseconds {
		div = nsPerMs
	}
	th := float64(r.SLA.Threshold) / div
	res := "FAIL"
	if r.Pass {
		res = "pass"
	}
	if r.NoData {
		return []string{r.SLA.Label(), "0", "-", val(th), "-", "no data", "-", "-"}
	}
	woc, share := "-", "-"
	if a := r.Attribution; a != nil {
		if a.ColdCount > 0 {
			if a.WithoutColdCount > 0 {
				woc = val(a.WithoutCold / div)
			}
			if !r.Pass {
				share = num(a.ColdShare*100, 0) + "%"
			}
		}
	}
	return []string{r.SLA.Label(), strconv.FormatUint(r.Count, 10), val(r.Measured / div), val(th),
		fmt.Sprintf("%+.1f%%", r.Deviation*100), res, woc, share}
}

func (rep *Report) renderCSV(w io.Writer) error {
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
		for _, k := range sortedKeys(c.Errors) {
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
		unit, div := string(Tokens), 1.0
		if r.SLA.Metric.Info().Unit == Nanoseconds {
			unit, div = "ms", nsPerMs
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

// errWriter keeps the first write error so that rendering code can print
// freely and check once.
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
	return n, err
}

func sortedKeys(m map[string]int64) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
