package bench

import (
	"fmt"
	"html/template"
	"io"
	"slices"

	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
)

// Comparison is two results side by side: per target, each headline
// figure in A and B with the delta B − A and its percentage of A.
type Comparison struct {
	A, B string
	Rows []CompareRow
}

// CompareRow is one figure of one target in both results.
type CompareRow struct {
	Target string
	Figure string
	Unit   string
	A, B   float64
	// HasA and HasB are false when a result lacks the figure.
	HasA, HasB bool
	// Incomparable, when set, says why A and B do not measure the same
	// thing (goodput against different SLAs): the rendered comparison
	// gives no delta then.
	Incomparable string
}

// Delta returns B − A.
func (r CompareRow) Delta() float64 { return r.B - r.A }

// DeltaPct returns (B − A) / A in percent, and false when A is zero.
func (r CompareRow) DeltaPct() (float64, bool) {
	if r.A == 0 {
		return 0, false
	}
	return 100 * (r.B - r.A) / r.A, true
}

// Compare pairs the targets of a and b by name (or, when each has one
// target, those two) and compares their headline figures. nameA and nameB
// label the columns (file names, say).
func Compare(a, b *Result, nameA, nameB string) (*Comparison, error) {
	c := &Comparison{A: nameA, B: nameB}
	pairs := [][2]*TargetResult{}
	for _, ta := range a.Targets {
		for _, tb := range b.Targets {
			if ta.Name == tb.Name {
				pairs = append(pairs, [2]*TargetResult{ta, tb})
			}
		}
	}
	if len(pairs) == 0 && len(a.Targets) == 1 && len(b.Targets) == 1 {
		pairs = append(pairs, [2]*TargetResult{a.Targets[0], b.Targets[0]})
	}
	if len(pairs) == 0 {
		return nil, errcodes.New(errcodes.InvalidParam, "bench: compare: the results have no target in common (targets are paired by name)")
	}
	for _, p := range pairs {
		name := p[0].Name
		if p[1].Name != name {
			name += " / " + p[1].Name
		}
		fa, fb := figures(p[0]), figures(p[1])
		sameSLAs := slices.Equal(targetSLAs(p[0]), targetSLAs(p[1]))
		for _, f := range fa {
			row := CompareRow{Target: name, Figure: f.name, Unit: f.unit, A: f.v, HasA: f.ok}
			for _, g := range fb {
				if g.name == f.name {
					row.B, row.HasB = g.v, g.ok
				}
			}
			if f.name == "goodput" && !sameSLAs {
				row.Incomparable = "SLAs differ"
			}
			if row.HasA || row.HasB {
				c.Rows = append(c.Rows, row)
			}
		}
	}
	return c, nil
}

// targetSLAs returns the SLAs the target's goodput was counted against:
// those of its recorder that name no endpoint or the target's own, the
// endpoint left out (targets paired across results may be named
// differently), sorted.
func targetSLAs(t *TargetResult) []string {
	var out []string
	for _, s := range t.Recorder.SLAs() {
		if s.Endpoint != "" && s.Endpoint != t.Name {
			continue
		}
		s.Endpoint = ""
		if s.Starts == "" {
			s.Starts = latency.StartsAll
		}
		out = append(out, s.String())
	}
	slices.Sort(out)
	return slices.Compact(out)
}

type figure struct {
	name, unit string
	v          float64
	ok         bool
}

func figures(t *TargetResult) []figure {
	var out []figure
	dist := func(m latency.Metric, label string) {
		d := t.Dist(m, "", "")
		ok := d.Count() > 0 && (m != latency.TTFT || t.Stream)
		out = append(out,
			figure{label + " mean", "ms", d.Mean() / 1e6, ok},
			figure{label + " sd", "ms", d.SD() / 1e6, ok && d.Count() > 1},
			figure{label + " p50", "ms", d.Quantile(0.5) / 1e6, ok},
			figure{label + " p95", "ms", d.Quantile(0.95) / 1e6, ok},
			figure{label + " p99", "ms", d.Quantile(0.99) / 1e6, ok})
	}
	dist(latency.TTFT, "TTFT")
	dist(latency.TPOT, "TPOT")
	dist(latency.E2E, "total")
	c := t.Counts()
	wall := t.Wall.D().Seconds()
	out = append(out,
		figure{"requests", "", float64(c.Requests), true},
		figure{"error rate", "%", 100 * float64(c.Failed) / float64(max(c.Requests, 1)), c.Requests > 0},
		figure{"ok rate", "req/s", float64(c.Requests-c.Failed) / wall, wall > 0},
		figure{"throughput", "tok/s", float64(c.OutputTokens) / wall, wall > 0},
		figure{"goodput", "req/s", float64(c.Good) / wall, wall > 0 && len(t.Recorder.SLAs()) > 0})
	lag := t.Dist(latency.ScheduleLag, "", "")
	out = append(out, figure{"schedule lag p99", "ms", lag.Quantile(0.99) / 1e6, lag.Count() > 0})
	if t.Ladder != nil {
		best, ok := t.Ladder.HighestHeld()
		out = append(out, figure{"ladder highest held", "req/s", best, ok})
	}
	return out
}

func (c *Comparison) rows() [][]string {
	rows := [][]string{{"target", "figure", "unit", c.A, c.B, "Δ", "Δ%"}}
	for _, r := range c.Rows {
		a, b, d, p := "-", "-", "-", "-"
		if r.HasA {
			a = fmtNum(r.A)
		}
		if r.HasB {
			b = fmtNum(r.B)
		}
		switch {
		case r.Incomparable != "":
			p = r.Incomparable
		case r.HasA && r.HasB:
			d = fmt.Sprintf("%+.4g", r.Delta())
			if pct, ok := r.DeltaPct(); ok {
				p = fmt.Sprintf("%+.1f%%", pct)
			}
		}
		rows = append(rows, []string{r.Target, r.Figure, r.Unit, a, b, d, p})
	}
	return rows
}

// Render writes the comparison as a text or Markdown table, CSV, or an
// HTML page.
func (c *Comparison) Render(w io.Writer, f Format) error {
	rows := c.rows()
	ew := &errWriter{w: w}
	switch f {
	case FormatText, FormatMarkdown:
		if f == FormatMarkdown {
			fmt.Fprintf(ew, "## %s vs %s\n\n", c.A, c.B)
		} else {
			fmt.Fprintf(ew, "%s (A) vs %s (B); Δ = B − A\n\n", c.A, c.B)
		}
		(&table{w: ew, md: f == FormatMarkdown, rows: rows}).flush()
	case FormatCSV:
		return writeCSV(w, rows)
	case FormatHTML:
		if err := compareTemplate.Execute(ew, struct {
			A, B string
			Rows [][]string
		}{c.A, c.B, rows}); err != nil {
			return errcodes.Wrap(err, errcodes.Internal, "bench: render comparison")
		}
	default:
		return errcodes.Errorf(errcodes.InvalidParam, "bench: comparison format %q: want text, markdown, csv or html", f)
	}
	return ew.err
}

var compareTemplate = template.Must(template.New("compare").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.A}} vs {{.B}}</title>
<style>body{font:14px system-ui,sans-serif;margin:24px}table{border-collapse:collapse}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:right}th{background:#f0f3f7}td:first-child,td:nth-child(2){text-align:left}</style>
</head><body><h1>{{.A}} vs {{.B}}</h1><p>Δ = B − A</p>
<table>{{range $i, $r := .Rows}}<tr>{{range $r}}{{if eq $i 0}}<th>{{.}}</th>{{else}}<td>{{.}}</td>{{end}}{{end}}</tr>{{end}}</table>
</body></html>
`))
