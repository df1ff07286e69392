package bench

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"html"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/cloudinfer/cloudinfer/latency"
	"github.com/cloudinfer/cloudinfer/latency/stats"
)

// withSLAs returns synthetic's result with its recorder counting goodput
// against the given SLAs instead of the default ttft p95 150ms.
func withSLAs(t *testing.T, name string, base int, slas ...stats.SLA) *Result {
	t.Helper()
	r := synthetic(t, name, base, 0, 100, 0)
	tr := r.Targets[0]
	rec, err := stats.NewRecorder(stats.RecorderOptions{SLAs: slas})
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
	strict := stats.SLA{Metric: latency.TTFT, Percentile: 95, Threshold: int64(150 * time.Millisecond), Starts: stats.StartsAll}
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

// measured returns a result of one streamed target whose requests had the
// given TTFTs and TPOTs (ms, one of each per request) and E2E = TTFT +
// 50 × TPOT, one request a second.
func measured(t *testing.T, name string, ttft, tpot []float64) *Result {
	t.Helper()
	require.Len(t, tpot, len(ttft))
	p := &Plan{Targets: []Target{{Name: name, Provider: "openai", Model: name, Stream: true}}, Limits: Limits{Requests: len(ttft)}}
	require.NoError(t, p.Prepare())
	col, err := newCollector(p, &p.Targets[0])
	require.NoError(t, err)
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	col.begin(start)
	ms := func(v float64) time.Duration { return time.Duration(math.Round(v * float64(time.Millisecond))) }
	for i := range ttft {
		s := latency.Sample{Endpoint: name, Start: latency.Warm, Streamed: true, OutputTokens: 51, TokenSource: latency.TokensFromServer,
			TTFT: ms(ttft[i]), TPOT: ms(tpot[i]), E2E: ms(ttft[i]) + 50*ms(tpot[i]),
			Begin: start.Add(time.Duration(i) * time.Second), Attempts: 1}
		s.End = s.Begin.Add(s.E2E)
		s.Has = s.Has.With(latency.TTFT).With(latency.TPOT).With(latency.E2E).With(latency.OutputTokens)
		col.sent.Add(1)
		col.add(&s, nil, s.Begin)
	}
	r := newResult(p)
	r.Begin = start
	r.Targets = append(r.Targets, col.result())
	return r
}

// normals returns n draws from N(mean, sd²), in ms.
func normals(rng *rand.Rand, n int, mean, sd float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = mean + sd*rng.NormFloat64()
	}
	return out
}

// TestCompareCIFindsAShift: B's TTFTs are A's distribution shifted up by
// 30 ms, their TPOTs the same distribution. The latency rows' intervals
// hold the true difference (30 ms for TTFT and total, whose TPOT part
// cancels; the shift is the same at every percentile), TTFT's exclude 0
// and read "B higher".
func TestCompareCIFindsAShift(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, shift = 500, 30.0
	a := measured(t, "m1", normals(rng, n, 200, 20), normals(rng, n, 10, 1))
	b := measured(t, "m1", normals(rng, n, 200+shift, 20), normals(rng, n, 10, 1))
	c, err := Compare(a, b, "a", "b")
	require.NoError(t, err)
	for _, fig := range []string{"TTFT mean", "TTFT p50", "TTFT p95", "TTFT p99", "total mean", "total p50", "total p95", "total p99"} {
		r := row(t, c, fig)
		require.True(t, r.HasCI, fig)
		assert.LessOrEqual(t, r.CILow, shift, fig)
		assert.GreaterOrEqual(t, r.CIHigh, shift, fig)
		assert.LessOrEqual(t, r.CILow, r.Delta(), fig)
		assert.GreaterOrEqual(t, r.CIHigh, r.Delta(), fig)
	}
	for _, fig := range []string{"TTFT mean", "TTFT p50", "TTFT p95"} {
		r := row(t, c, fig)
		assert.Positive(t, r.CILow, "%s: [%g, %g]", fig, r.CILow, r.CIHigh)
		assert.Equal(t, VerdictHigher, r.Verdict(), fig)
	}
	// The mean's interval is about ±1.96 × 20 × √(2/500) ≈ ±2.5 ms wide.
	m := row(t, c, "TTFT mean")
	assert.InDelta(t, 2*1.96*20*math.Sqrt(2.0/n), m.CIHigh-m.CILow, 0.5)
	for _, fig := range []string{"TTFT sd", "requests", "ok rate", "throughput"} {
		assert.False(t, row(t, c, fig).HasCI, fig)
		assert.Equal(t, VerdictNone, row(t, c, fig).Verdict(), fig)
	}

	// The table shows the interval and the verdict.
	var buf bytes.Buffer
	require.NoError(t, c.Render(&buf, FormatText))
	out := buf.String()
	assert.Contains(t, out, "Δ 95% CI")
	line := lineWith(t, out, "TTFT mean")
	assert.Contains(t, line, fmt.Sprintf("[%s, %s]", signed(m.CILow), signed(m.CIHigh)))
	assert.True(t, strings.HasSuffix(strings.TrimSpace(line), "B higher"), line)
	assert.Equal(t, []string{"-", "-"}, lastFields(lineWith(t, out, "TTFT sd"), 2))

	// B − A = −(A − B): swapped, the interval is mirrored and B is lower.
	c, err = Compare(b, a, "b", "a")
	require.NoError(t, err)
	s := row(t, c, "TTFT mean")
	assert.InDelta(t, -m.CIHigh, s.CILow, 1e-9)
	assert.InDelta(t, -m.CILow, s.CIHigh, 1e-9)
	assert.Equal(t, VerdictLower, s.Verdict())
}

// lastFields returns the last n space-separated fields of line.
func lastFields(line string, n int) []string {
	f := strings.Fields(line)
	return f[max(len(f)-n, 0):]
}

func lineWith(t *testing.T, out, s string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	t.Fatalf("no line with %q in\n%s", s, out)
	return ""
}

// TestCompareCISameDistribution: two runs drawn from the same distribution
// differ only by noise, and the verdict says so.
func TestCompareCISameDistribution(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 300
	a := measured(t, "m1", normals(rng, n, 200, 20), normals(rng, n, 10, 1))
	b := measured(t, "m1", normals(rng, n, 200, 20), normals(rng, n, 10, 1))
	c, err := Compare(a, b, "a", "b")
	require.NoError(t, err)
	for _, m := range []string{"TTFT", "TPOT", "total"} {
		for _, s := range []string{" mean", " p50", " p95"} {
			r := row(t, c, m+s)
			require.True(t, r.HasCI, m+s)
			assert.Equal(t, VerdictUnclear, r.Verdict(), "%s: Δ %g [%g, %g]", m+s, r.Delta(), r.CILow, r.CIHigh)
		}
		// 300 values are too few for a distribution-free interval of p99.
		assert.False(t, row(t, c, m+" p99").HasCI)
	}
}

// TestWelchIntervalByHand checks the mean rows' interval against the
// formula worked in the test from the raw values.
func TestWelchIntervalByHand(t *testing.T) {
	meanVar := func(xs []float64) (m, v float64) {
		for _, x := range xs {
			m += x
		}
		m /= float64(len(xs))
		for _, x := range xs {
			v += (x - m) * (x - m)
		}
		return m, v / float64(len(xs)-1)
	}
	const same = 1e-9
	t.Run("equal n and sd", func(t *testing.T) {
		// A = 10, 20, …, 100 ms and B = A + 5 ms: the same variance
		// (100 × 55/6 ms²) and n, so ν = 2(n − 1) = 18 exactly, and
		// t(0.975, 18) = 2.10092204 (tables).
		var xa, xb []float64
		for i := 1; i <= 10; i++ {
			xa = append(xa, 10*float64(i))
			xb = append(xb, 10*float64(i)+5)
		}
		se := math.Sqrt(2 * 100 * 55.0 / 6 / 10)
		lo, hi := 5-2.10092204*se, 5+2.10092204*se // [-23.4467, 33.4467]
		c, err := Compare(measured(t, "m1", xa, xa), measured(t, "m1", xb, xa), "a", "b")
		require.NoError(t, err)
		r := row(t, c, "TTFT mean")
		require.True(t, r.HasCI)
		assert.InDelta(t, lo, r.CILow, 1e-6)
		assert.InDelta(t, hi, r.CIHigh, 1e-6)
		assert.InDelta(t, -23.4467, r.CILow, 1e-4)
		assert.Equal(t, VerdictUnclear, r.Verdict())
		// TPOT is the same on both sides: an interval around 0.
		p := row(t, c, "TPOT mean")
		assert.InDelta(t, -p.CIHigh, p.CILow, same)
	})
	t.Run("unequal n and sd", func(t *testing.T) {
		xa := []float64{100, 120, 130, 160, 190}
		xb := []float64{250, 255, 270, 271, 280, 300, 310, 305}
		ma, va := meanVar(xa)
		mb, vb := meanVar(xb)
		ea, eb := va/float64(len(xa)), vb/float64(len(xb))
		nu := (ea + eb) * (ea + eb) / (ea*ea/float64(len(xa)-1) + eb*eb/float64(len(xb)-1))
		q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: nu}.Quantile(0.975)
		h := q * math.Sqrt(ea+eb)
		c, err := Compare(measured(t, "m1", xa, xa), measured(t, "m1", xb, xb), "a", "b")
		require.NoError(t, err)
		r := row(t, c, "TTFT mean")
		require.True(t, r.HasCI)
		assert.InDelta(t, mb-ma-h, r.CILow, 1e-6)
		assert.InDelta(t, mb-ma+h, r.CIHigh, 1e-6)
		assert.Equal(t, VerdictHigher, r.Verdict(), "[%g, %g]", r.CILow, r.CIHigh)
		// Too few values for a percentile interval.
		assert.False(t, row(t, c, "TTFT p50").HasCI)
	})
}

// binomCDF returns P(B ≤ k) for B ~ binomial(n, p), summed term by term.
func binomCDF(n, k int, p float64) float64 {
	s := 0.0
	for i := 0; i <= k; i++ {
		lg := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
		s += math.Exp(lg(n) - lg(i) - lg(n-i) + float64(i)*math.Log(p) + float64(n-i)*math.Log1p(-p))
	}
	return s
}

// TestOrderRanks checks the percentile intervals' ranks against binomial
// sums computed here: for each side, order statistics X(l) and X(u)
// enclose the q-quantile with probability ≥ 1 − P(B ≤ l − 1) − P(B ≥ u) ≥
// 97.5%, B ~ binomial(n, q). Each tail gets 1.25%, except when the
// maximum already misses with more (q^n > 1.25%): then u = n and the lower
// tail gets 2.5% − q^n. No inner rank would stay within its tail, and the
// smallest samples with an interval are those whose minimum and maximum
// together miss with at most 2.5%.
func TestOrderRanks(t *testing.T) {
	for _, q := range []float64{0.5, 0.95, 0.99} {
		first := 1
		for math.Pow(q, float64(first))+math.Pow(1-q, float64(first)) > 0.025 {
			first++
		}
		_, _, ok := orderRanks(uint64(first-1), q, 0.025)
		assert.False(t, ok, "q %g n %d", q, first-1)

		for _, n := range []int{first, first + 1, first + 50, 1000, 5000} {
			l, u, ok := orderRanks(uint64(n), q, 0.025)
			require.True(t, ok, "q %g n %d", q, n)
			tl, tu := 0.0125, 0.0125
			if pmax := math.Pow(q, float64(n)); pmax > tu {
				tl, tu = 0.025-pmax, pmax
				assert.Equal(t, uint64(n), u, "q %g n %d: the maximum", q, n)
			}
			lower, upper := binomCDF(n, int(l)-1, q), 1-binomCDF(n, int(u)-1, q)
			assert.GreaterOrEqual(t, 1-lower-upper, 0.975-1e-12, "q %g n %d: [%d, %d]", q, n, l, u)
			assert.LessOrEqual(t, lower, tl+1e-12, "q %g n %d", q, n)
			assert.LessOrEqual(t, upper, tu+1e-12, "q %g n %d", q, n)
			assert.Greater(t, binomCDF(n, int(l), q), tl, "q %g n %d: l+1 would do", q, n)
			if u > 1 {
				assert.Greater(t, 1-binomCDF(n, int(u)-2, q), tu, "q %g n %d: u−1 would do", q, n)
			}
		}
	}
	assert.Equal(t, 7, firstWithInterval(0.5))
	assert.Equal(t, 72, firstWithInterval(0.95))
	assert.Equal(t, 368, firstWithInterval(0.99))
	// The median of 100 values at 97.5%: X(39) to X(62).
	l, u, ok := orderRanks(100, 0.5, 0.025)
	assert.True(t, ok)
	assert.Equal(t, [2]uint64{39, 62}, [2]uint64{l, u})
}

// firstWithInterval returns the smallest sample with an interval for the
// q-quantile.
func firstWithInterval(q float64) int {
	for n := 1; ; n++ {
		if _, _, ok := orderRanks(uint64(n), q, 0.025); ok {
			return n
		}
	}
}

// TestPercentileCICoverage: over 200 seeded pairs of runs of 400 requests
// from a skewed (log-normal) distribution, the percentile rows' interval
// holds the true difference in at least 95% of the pairs, for B from the
// same distribution (Δ = 0) and for B 20% slower (Δ = 0.2 × A's
// quantile). Welch's interval is approximate (about 95%, within the
// sampling noise of 200 pairs).
func TestPercentileCICoverage(t *testing.T) {
	const reps, n, mu, sigma = 200, 400, 4.0, 0.5 // median e⁴ ≈ 55 ms
	// Standard normal quantiles at 0.5, 0.95 and 0.99.
	z := map[float64]float64{0.5: 0, 0.95: 1.6448536269514722, 0.99: 2.3263478740408408}
	rng := rand.New(rand.NewPCG(5, 6))
	draw := func(scale float64) *stats.Dist {
		d := &stats.Dist{}
		for range n {
			d.Add(int64(scale * math.Exp(mu+sigma*rng.NormFloat64()) * 1e6))
		}
		return d
	}
	for _, scale := range []float64{1, 1.2} {
		held := map[float64]int{}
		for range reps {
			a, b := draw(1), draw(scale)
			for _, q := range []float64{0, 0.5, 0.95, 0.99} {
				truth := (scale - 1) * math.Exp(mu+0.5*sigma*sigma) // the means' difference
				if q > 0 {
					truth = (scale - 1) * math.Exp(mu+sigma*z[q])
				}
				lo, hi, ok := deltaCI(a, b, q)
				require.True(t, ok, "q %g", q)
				if lo <= truth && truth <= hi {
					held[q]++
				}
			}
		}
		t.Logf("scale %g: held in %v of %d", scale, held, reps)
		for _, q := range []float64{0.5, 0.95, 0.99} {
			assert.GreaterOrEqual(t, held[q], reps*95/100, "scale %g q %g", scale, q)
		}
		assert.GreaterOrEqual(t, held[0], reps*90/100, "scale %g mean", scale)
	}
}

// TestCompareCINeedsSamples: one request a side gives no interval on any
// row, and the table shows "-".
func TestCompareCINeedsSamples(t *testing.T) {
	c, err := Compare(measured(t, "m1", []float64{100}, []float64{10}), measured(t, "m1", []float64{200}, []float64{20}), "a", "b")
	require.NoError(t, err)
	for _, r := range c.Rows {
		assert.False(t, r.HasCI, r.Figure)
		assert.Equal(t, VerdictNone, r.Verdict(), r.Figure)
	}
	var buf bytes.Buffer
	require.NoError(t, c.Render(&buf, FormatText))
	assert.Equal(t, []string{"-", "-"}, lastFields(lineWith(t, buf.String(), "TTFT mean"), 2))

	// Two a side with no spread: Welch's ν is undefined.
	c, err = Compare(measured(t, "m1", []float64{100, 100}, []float64{10, 10}), measured(t, "m1", []float64{200, 200}, []float64{10, 10}), "a", "b")
	require.NoError(t, err)
	assert.False(t, row(t, c, "TTFT mean").HasCI)
}

// TestCompareCIColumnsInEveryFormat: CSV, Markdown and HTML carry the
// interval and the verdict too.
func TestCompareCIColumnsInEveryFormat(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	a := measured(t, "m1", normals(rng, 100, 200, 20), normals(rng, 100, 10, 1))
	b := measured(t, "m1", normals(rng, 100, 300, 20), normals(rng, 100, 10, 1))
	c, err := Compare(a, b, "a", "b")
	require.NoError(t, err)
	m := row(t, c, "TTFT mean")
	ci := fmt.Sprintf("[%s, %s]", signed(m.CILow), signed(m.CIHigh))

	var buf bytes.Buffer
	require.NoError(t, c.Render(&buf, FormatCSV))
	recs, err := csv.NewReader(&buf).ReadAll()
	require.NoError(t, err)
	assert.Equal(t, []string{"target", "figure", "unit", "a", "b", "Δ", "Δ%", "Δ 95% CI", "verdict"}, recs[0])
	var found bool
	for _, r := range recs[1:] {
		if r[1] == "TTFT mean" {
			found = true
			assert.Equal(t, []string{ci, "B higher"}, r[7:])
		}
		if r[1] == "requests" {
			assert.Equal(t, []string{"-", "-"}, r[7:])
		}
	}
	assert.True(t, found)

	buf.Reset()
	require.NoError(t, c.Render(&buf, FormatMarkdown))
	assert.Contains(t, buf.String(), "| Δ 95% CI | verdict |")
	assert.Contains(t, buf.String(), "| "+ci+" | B higher |")

	buf.Reset()
	require.NoError(t, c.Render(&buf, FormatHTML))
	page := html.UnescapeString(buf.String())
	assert.Contains(t, page, "<th>Δ 95% CI</th><th>verdict</th>")
	assert.Contains(t, page, "<td>"+ci+"</td><td>B higher</td>")
}

// TestCompareCountsAreWhole: the requests row prints its counts and their
// delta as whole numbers, not as 3.0.
func TestCompareCountsAreWhole(t *testing.T) {
	a := measured(t, "m1", []float64{100, 110, 120}, []float64{10, 11, 12})
	b := measured(t, "m1", []float64{100, 110, 120, 130, 140}, []float64{10, 11, 12, 13, 14})
	c, err := Compare(a, b, "a", "b")
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, c.Render(&buf, FormatText))
	t.Log("\n" + buf.String())
	var found bool
	for line := range strings.SplitSeq(buf.String(), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] == "requests" {
			found = true
			assert.Equal(t, []string{"m1", "requests", "3", "5", "+2", "+66.7%"}, f[:6])
		}
	}
	assert.True(t, found, "a requests row")
}
