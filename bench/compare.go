package bench

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/latency/stats"
)

// Comparison is two results side by side: per target, each headline
// figure in A and B with the delta B − A and its percentage of A, and for
// the latency rows a 95% confidence interval for the delta and a verdict
// (see CompareRow).
type Comparison struct {
	A, B string
	Rows []CompareRow
}

// CompareRow is one figure of one target in both results.
//
// The latency rows carry a 95% confidence interval for the delta B − A: a
// range that holds the true difference (the one the delta would settle at
// with ever more requests) with 95% confidence, so it shows how much of
// the delta may be sampling noise. It counts only the noise of drawing
// requests; a difference between the conditions of the two runs (another
// time of day, another client machine) is not noise to it. The rows' Δ
// lies inside. Per row:
//
//   - mean rows (TTFT, TPOT and total mean): Welch's t interval,
//     Δ ± t(0.975, ν)·√(s_A²/n_A + s_B²/n_B), with ν the Welch–Satterthwaite
//     degrees of freedom. It needs at least two values on each side and
//     some spread in them; it assumes the requests of a run are independent
//     draws and leans on the central limit theorem, so a handful of values
//     from a skewed distribution makes it approximate.
//   - percentile rows (p50, p95, p99): each side's percentile is bounded
//     without any assumption on the distribution, by the order statistics
//     at the ranks that the binomial(n, q) distribution gives a coverage of
//     at least 97.5%, read off the side's sketch and widened by its relative
//     accuracy (stats.RelativeAccuracy). The interval for Δ is then
//     [lo_B − hi_A, hi_B − lo_A]. It is conservative: it misses the true
//     difference only when one of the two sides' intervals misses its
//     percentile, so its coverage is at least 95% whatever the
//     distributions, and in practice higher. A side with too few values for
//     the ranks to exist (fewer than 7 for p50, 72 for p95 and 368 for p99)
//     gives no interval.
//
// The other rows (sd, counts, rates, goodput, schedule lag) have none.
type CompareRow struct {
	Target string
	Figure string
	Unit   string
	A, B   float64
	// Count is true when the figure is a count (requests): A, B and the
	// delta are whole numbers, and render as such.
	Count bool
	// HasA and HasB are false when a result lacks the figure.
	HasA, HasB bool
	// Incomparable, when set, says why A and B do not measure the same
	// thing (goodput against different SLAs): the rendered comparison
	// gives no delta then.
	Incomparable string
	// HasCI is true when the row has a 95% confidence interval for B − A:
	// [CILow, CIHigh], in the row's Unit.
	HasCI         bool
	CILow, CIHigh float64
}

// The verdicts of CompareRow.Verdict.
const (
	// VerdictLower: the interval for B − A lies below zero.
	VerdictLower = "B lower"
	// VerdictHigher: the interval for B − A lies above zero.
	VerdictHigher = "B higher"
	// VerdictUnclear: the interval for B − A contains zero: the two runs
	// do not tell which side is lower.
	VerdictUnclear = "no clear difference"
	// VerdictNone: the row has no interval.
	VerdictNone = "-"
)

// Verdict reads the row's confidence interval: VerdictLower or
// VerdictHigher when it excludes zero (B's figure is lower or higher than
// A's, beyond the noise of the two runs at 95% confidence),
// VerdictUnclear when it contains zero (which is not evidence that the two
// are equal: more requests may still tell them apart), VerdictNone when
// the row has no interval.
func (r CompareRow) Verdict() string {
	switch {
	case !r.HasCI:
		return VerdictNone
	case r.CILow > 0:
		return VerdictHigher
	case r.CIHigh < 0:
		return VerdictLower
	}
	return VerdictUnclear
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
			row := CompareRow{Target: name, Figure: f.name, Unit: f.unit, A: f.v, HasA: f.ok, Count: f.count}
			var fig figure
			for _, g := range fb {
				if g.name == f.name {
					row.B, row.HasB = g.v, g.ok
					fig = g
				}
			}
			if f.name == "goodput" && !sameSLAs {
				row.Incomparable = "SLAs differ"
			}
			if row.HasA && row.HasB && row.Incomparable == "" && f.dist != nil && fig.dist != nil {
				row.CILow, row.CIHigh, row.HasCI = deltaCI(f.dist, fig.dist, f.q)
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
			s.Starts = stats.StartsAll
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
	count      bool // v is a count: a whole number
	// dist, for the latency rows that have a confidence interval, is the
	// distribution (in ns) the figure was read from: its mean when q is 0,
	// its q-quantile otherwise.
	dist *stats.Dist
	q    float64
}

func figures(t *TargetResult) []figure {
	var out []figure
	dist := func(m latency.Metric, label string) {
		d := t.Dist(m, "", "")
		ok := d.Count() > 0 && (m != latency.TTFT || t.Stream)
		out = append(out,
			figure{name: label + " mean", unit: "ms", v: d.Mean() / 1e6, ok: ok, dist: d},
			figure{name: label + " sd", unit: "ms", v: d.SD() / 1e6, ok: ok && d.Count() > 1},
			figure{name: label + " p50", unit: "ms", v: d.Quantile(0.5) / 1e6, ok: ok, dist: d, q: 0.5},
			figure{name: label + " p95", unit: "ms", v: d.Quantile(0.95) / 1e6, ok: ok, dist: d, q: 0.95},
			figure{name: label + " p99", unit: "ms", v: d.Quantile(0.99) / 1e6, ok: ok, dist: d, q: 0.99})
	}
	dist(latency.TTFT, "TTFT")
	dist(latency.TPOT, "TPOT")
	dist(latency.E2E, "total")
	c := t.Counts()
	wall := t.Wall.D().Seconds()
	out = append(out,
		figure{name: "requests", v: float64(c.Requests), ok: true, count: true},
		figure{name: "error rate", unit: "%", v: 100 * float64(c.Failed) / float64(max(c.Requests, 1)), ok: c.Requests > 0},
		figure{name: "ok rate", unit: "req/s", v: float64(c.Requests-c.Failed) / wall, ok: wall > 0},
		figure{name: "throughput", unit: "tok/s", v: float64(c.OutputTokens) / wall, ok: wall > 0},
		figure{name: "goodput", unit: "req/s", v: float64(c.Good) / wall, ok: wall > 0 && len(t.Recorder.SLAs()) > 0})
	lag := t.Dist(latency.ScheduleLag, "", "")
	out = append(out, figure{name: "schedule lag p99", unit: "ms", v: lag.Quantile(0.99) / 1e6, ok: lag.Count() > 0})
	if t.Ladder != nil {
		best, ok := t.Ladder.HighestHeld()
		out = append(out, figure{name: "ladder highest held", unit: "req/s", v: best, ok: ok})
	}
	return append(out, serverFigures(t)...)
}

// confidence is the confidence level of the comparison's intervals.
const confidence = 0.95

// deltaCI returns the confidence interval, in ms, for the difference
// between b's and a's mean (q = 0) or q-quantile, and false when there is
// none (see CompareRow).
func deltaCI(a, b *stats.Dist, q float64) (lo, hi float64, ok bool) {
	if q == 0 {
		lo, hi, ok = welchCI(a, b, confidence)
	} else {
		// The interval for Δ misses only when one side's misses: each side
		// gets half the miss probability.
		miss := (1 - confidence) / 2
		var loA, hiA, loB, hiB float64
		var okA, okB bool
		loA, hiA, okA = quantileCI(a, q, miss)
		loB, hiB, okB = quantileCI(b, q, miss)
		lo, hi, ok = loB-hiA, hiB-loA, okA && okB
	}
	lo, hi = lo/1e6, hi/1e6
	if !ok || !finite(lo) || !finite(hi) {
		return 0, 0, false
	}
	return lo, hi, true
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// welchCI returns Welch's t interval at the given confidence level for
// mean(b) − mean(a), in the distributions' unit:
//
//	Δ ± t(1 − (1 − level)/2, ν) · √(s_a²/n_a + s_b²/n_b),
//	ν = (s_a²/n_a + s_b²/n_b)² / ((s_a²/n_a)²/(n_a − 1) + (s_b²/n_b)²/(n_b − 1)),
//
// with s the sample standard deviations and ν the Welch–Satterthwaite
// degrees of freedom. It is false with fewer than two values on a side or
// with no spread on either (ν is undefined then).
func welchCI(a, b *stats.Dist, level float64) (lo, hi float64, ok bool) {
	if a.Count() < 2 || b.Count() < 2 {
		return 0, 0, false
	}
	na, nb := float64(a.Count()), float64(b.Count())
	sa, sb := a.SD(), b.SD()
	va, vb := sa*sa/na, sb*sb/nb
	se2 := va + vb
	if !(se2 > 0) || !finite(se2) {
		return 0, 0, false
	}
	nu := se2 * se2 / (va*va/(na-1) + vb*vb/(nb-1))
	if !(nu > 0) || !finite(nu) {
		return 0, 0, false
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: nu}.Quantile(1 - (1-level)/2)
	d := b.Mean() - a.Mean()
	h := t * math.Sqrt(se2)
	return d - h, d + h, finite(d-h) && finite(d+h)
}

// quantileCI returns an interval [lo, hi] that holds the q-quantile of the
// population d's values were drawn from with probability at least
// 1 − miss, whatever its distribution, and false when d has too few values
// for one.
//
// lo and hi are the order statistics at the ranks orderRanks gives, read
// off d's sketch and widened by its relative accuracy α: the sketch
// returns, for a value x of that rank, some v with |v − x| ≤ α·x, so x
// lies in [v/(1+α), v/(1−α)] (for v ≥ 0). Every order statistic lies in
// d's exact [Min, Max], which bounds the widening.
func quantileCI(d *stats.Dist, q, miss float64) (lo, hi float64, ok bool) {
	n := d.Count()
	l, u, ok := orderRanks(n, q, miss)
	if !ok {
		return 0, 0, false
	}
	// Quantile is nearest-rank: quantile k/n is the value of rank k.
	at := func(k uint64) float64 { return d.Quantile(float64(k) / float64(n)) }
	const acc = stats.RelativeAccuracy
	lo, hi = at(l), at(u)
	if lo >= 0 {
		lo /= 1 + acc
	} else {
		lo /= 1 - acc
	}
	if hi >= 0 {
		hi /= 1 - acc
	} else {
		hi /= 1 + acc
	}
	return max(lo, float64(d.Min())), min(hi, float64(d.Max())), true
}

// orderRanks returns the 1-based ranks l ≤ u such that, for n values drawn
// independently from any distribution, the order statistics X(l) and X(u)
// enclose its q-quantile with probability at least 1 − miss, and false
// when n is too small for such ranks.
//
// With B ~ binomial(n, q), the count of values below the quantile, X(l)
// lies above it with probability at most P(B ≤ l − 1) and X(u) below it
// with probability at most P(B ≥ u): the ranks are the innermost ones with
// each tail within miss/2. When the extreme value on one side (the
// minimum or the maximum) already misses with more than miss/2, it is
// taken as that end and the other end gets what is left of miss.
//
// The binomial is gonum's exact distribution (its CDF is a regularized
// incomplete beta function, cheap for any n), found by bisection, rather
// than the normal approximation: the approximation is worst in the tails
// of high percentiles at small n — p99 of a few hundred requests, where B
// is far from symmetric — which is where the interval matters most.
func orderRanks(n uint64, q, miss float64) (l, u uint64, ok bool) {
	if n == 0 || !(q > 0 && q < 1) {
		return 0, 0, false
	}
	bin := distuv.Binomial{N: float64(n), P: q}
	below := func(k uint64) float64 { return bin.CDF(float64(k)) }     // P(B ≤ k)
	above := func(k uint64) float64 { return 1 - bin.CDF(float64(k)) } // P(B > k)
	pl, pu := below(0), above(n-1)                                     // the minimum's and the maximum's miss
	tl, tu := miss/2, miss/2
	switch {
	case pl+pu > miss:
		return 0, 0, false
	case pl > tl:
		tl, tu = pl, miss-pl
	case pu > tu:
		tl, tu = miss-pu, pu
	}
	// l = the largest k in [1, n] with P(B ≤ k−1) ≤ tl: P(B ≤ 0) = pl ≤ tl.
	l = uint64(sort.Search(int(n), func(i int) bool { return below(uint64(i)) > tl }))
	// u = the smallest k in [1, n] with P(B ≥ k) ≤ tu: P(B ≥ n) = pu ≤ tu.
	u = 1 + uint64(sort.Search(int(n), func(i int) bool { return above(uint64(i)) <= tu }))
	return max(l, 1), min(u, n), true
}

func (c *Comparison) rows() [][]string {
	rows := [][]string{{"target", "figure", "unit", c.A, c.B, "Δ", "Δ%", "Δ 95% CI", "verdict"}}
	for _, r := range c.Rows {
		a, b, d, p, ci := "-", "-", "-", "-", "-"
		num, delta := fmtNum, "%+.4g"
		if r.Count {
			num, delta = func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }, "%+.0f"
		}
		if r.HasA {
			a = num(r.A)
		}
		if r.HasB {
			b = num(r.B)
		}
		switch {
		case r.Incomparable != "":
			p = r.Incomparable
		case r.HasA && r.HasB:
			d = fmt.Sprintf(delta, r.Delta())
			if pct, ok := r.DeltaPct(); ok {
				p = fmt.Sprintf("%+.1f%%", pct)
			}
		}
		if r.HasCI {
			ci = "[" + signed(r.CILow) + ", " + signed(r.CIHigh) + "]"
		}
		rows = append(rows, []string{r.Target, r.Figure, r.Unit, a, b, d, p, ci, r.Verdict()})
	}
	return rows
}

// signed formats v as fmtNum does, with its sign.
func signed(v float64) string {
	if v < 0 {
		return "-" + fmtNum(-v)
	}
	return "+" + fmtNum(v)
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
th,td{border:1px solid #ddd;padding:4px 8px;text-align:right}th{background:#f0f3f7}td:first-child,td:nth-child(2),td:last-child{text-align:left}</style>
</head><body><h1>{{.A}} vs {{.B}}</h1><p>Δ = B − A; Δ 95% CI: a 95% confidence interval for Δ (Welch's t for means, order statistics for percentiles)</p>
<table>{{range $i, $r := .Rows}}<tr>{{range $r}}{{if eq $i 0}}<th>{{.}}</th>{{else}}<td>{{.}}</td>{{end}}{{end}}</tr>{{end}}</table>
</body></html>
`))
