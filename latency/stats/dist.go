package stats

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"math/big"
	"math/bits"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/DataDog/sketches-go/ddsketch/mapping"
	"github.com/DataDog/sketches-go/ddsketch/store"

	"github.com/cloudinfer/cloudinfer/errcodes"
	"github.com/cloudinfer/cloudinfer/latency/internal/quantile"
)

// RelativeAccuracy is the quantile sketch's relative accuracy: a reported
// quantile is within 1% of a value of the right rank.
const RelativeAccuracy = 0.01

// logScale is the fixed-point scale of the natural logarithms kept for the
// LogNormal fit: ln(x) is summed as round(ln(x)·1e9), an integer, so that
// the log moments merge exactly too. The rounding (≤ 5e-10 in ln x) is far
// below any timing resolution.
const logScale = 1e9

// sketchMapping is the one index mapping of every sketch; sketches merge
// only when their mappings are equal.
var sketchMapping = func() mapping.IndexMapping {
	m, err := mapping.NewLogarithmicMapping(RelativeAccuracy)
	if err != nil {
		panic(err) // a constant argument: unreachable
	}
	return m
}()

// logMultiplier is sketchMapping's 1/ln(γ), computed as the library does,
// so that Dist.Add can index a positive value with the logarithm it takes
// anyway for the LogNormal moments: index = ⌊ln(v)·logMultiplier⌋, the
// logarithmic mapping's definition (TestSketchIndexMatchesMapping checks
// it against the library).
var logMultiplier = 1 / math.Log((1+RelativeAccuracy)/(1-RelativeAccuracy))

func newSketch() *ddsketch.DDSketch {
	return ddsketch.NewDDSketch(sketchMapping, store.NewDenseStore(), store.NewDenseStore())
}

// positive returns the sketch's positive-value store.
func positive(s *ddsketch.DDSketch) *store.DenseStore {
	p, _ := s.GetPositiveValueStore().(*store.DenseStore)
	return p
}

// wide is a signed 128-bit two's-complement integer. Dist keeps its sums
// (of values, of squares, of fixed-point logs) in it so that they are exact
// and merging is associative: two recorders merged give the very numbers
// one recorder would have. The standard library has no fixed-size 128-bit
// integer and math/big allocates on every addition, too slow for the
// recording path; math/bits does the carries.
type wide struct {
	hi int64
	lo uint64
}

func (w *wide) add(x int64) {
	var c uint64
	w.lo, c = bits.Add64(w.lo, uint64(x), 0)
	w.hi += x>>63 + int64(c)
}

func (w *wide) addSquare(x int64) {
	u := uint64(x)
	if x < 0 {
		u = -u
	}
	h, l := bits.Mul64(u, u)
	var c uint64
	w.lo, c = bits.Add64(w.lo, l, 0)
	w.hi += int64(h) + int64(c)
}

func (w *wide) addWide(o wide) {
	var c uint64
	w.lo, c = bits.Add64(w.lo, o.lo, 0)
	w.hi += o.hi + int64(c)
}

func (w wide) big() *big.Int {
	b := big.NewInt(w.hi)
	b.Lsh(b, 64)
	return b.Add(b, new(big.Int).SetUint64(w.lo))
}

var (
	two64   = new(big.Int).Lsh(big.NewInt(1), 64)
	maxWide = new(big.Int).Lsh(big.NewInt(1), 127)
	minWide = new(big.Int).Neg(maxWide)
)

func wideFromBig(b *big.Int) (wide, bool) {
	if b.Cmp(minWide) < 0 || b.Cmp(maxWide) >= 0 {
		return wide{}, false
	}
	lo := new(big.Int).Mod(b, two64) // Euclidean: 0 ≤ lo < 2^64
	hi := new(big.Int).Sub(b, lo)
	hi.Rsh(hi, 64)
	return wide{hi: hi.Int64(), lo: lo.Uint64()}, true
}

// Dist is the distribution of one metric: a DDSketch (relative accuracy
// 1%) for quantiles, plus exact count, sum, sum of squares, minimum and
// maximum, and the exact moments of ln(value) for the LogNormal fit. Values
// are int64: nanoseconds for durations, counts for tokens. Sums are kept to
// 128 bits, exact for any realistic run (values under 10^12 — about 16
// minutes in nanoseconds — for up to 10^14 samples).
//
// Merging is exact: the sketch's bins are added and the integer sums too,
// so merged Dists equal the Dist that saw every value. The zero value is an
// empty Dist. A Dist is not safe for concurrent use; Recorder guards its own.
type Dist struct {
	sketch   *ddsketch.DDSketch
	pos      *store.DenseStore // sketch's positive store
	n        uint64
	sum      wide
	sumSq    wide
	min, max int64
	// moments of round(ln(v)·logScale) over the positive values
	logN     uint64
	logSum   wide
	logSumSq wide
}

// Add records one value.
func (d *Dist) Add(v int64) {
	if d.sketch == nil {
		d.sketch = newSketch()
		d.pos = positive(d.sketch)
	}
	if v > 0 {
		ln := math.Log(float64(v)) // ≥ 0: v is a positive integer
		d.pos.Add(int(ln * logMultiplier))
		l := int64(math.Round(ln * logScale))
		d.logN++
		d.logSum.add(l)
		d.logSumSq.addSquare(l)
	} else {
		// Every int64 is within the sketch's indexable range: no error.
		_ = d.sketch.Add(float64(v))
	}
	if d.n == 0 || v < d.min {
		d.min = v
	}
	if d.n == 0 || v > d.max {
		d.max = v
	}
	d.n++
	d.sum.add(v)
	d.sumSq.addSquare(v)
}

// Merge adds o's values to d.
func (d *Dist) Merge(o *Dist) {
	if o == nil || o.n == 0 {
		return
	}
	if d.sketch == nil {
		d.sketch = newSketch()
		d.pos = positive(d.sketch)
	}
	// Both sketches use sketchMapping, so the merge cannot fail.
	_ = d.sketch.MergeWith(o.sketch)
	if d.n == 0 || o.min < d.min {
		d.min = o.min
	}
	if d.n == 0 || o.max > d.max {
		d.max = o.max
	}
	d.n += o.n
	d.sum.addWide(o.sum)
	d.sumSq.addWide(o.sumSq)
	d.logN += o.logN
	d.logSum.addWide(o.logSum)
	d.logSumSq.addWide(o.logSumSq)
}

// Copy returns a deep copy of d.
func (d *Dist) Copy() *Dist {
	c := *d
	if d.sketch != nil {
		c.sketch = d.sketch.Copy()
		c.pos = positive(c.sketch)
	}
	return &c
}

// Count returns the number of values.
func (d *Dist) Count() uint64 { return d.n }

// Min returns the smallest value, 0 when empty.
func (d *Dist) Min() int64 { return d.min }

// Max returns the largest value, 0 when empty.
func (d *Dist) Max() int64 { return d.max }

// Mean returns the exact mean (rounded to float64), 0 when empty.
func (d *Dist) Mean() float64 {
	if d.n == 0 {
		return 0
	}
	f, _ := new(big.Rat).SetFrac(d.sum.big(), new(big.Int).SetUint64(d.n)).Float64()
	return f
}

// SD returns the sample standard deviation (divisor n − 1), computed
// exactly from the integer sums as sqrt((n·Σx² − (Σx)²) / (n(n − 1))); 0
// with fewer than two values.
func (d *Dist) SD() float64 {
	return sampleSD(d.n, d.sum, d.sumSq, 1)
}

func sampleSD(n uint64, sum, sumSq wide, scale float64) float64 {
	if n < 2 {
		return 0
	}
	bn := new(big.Int).SetUint64(n)
	num := new(big.Int).Mul(bn, sumSq.big())
	num.Sub(num, new(big.Int).Mul(sum.big(), sum.big()))
	if num.Sign() <= 0 {
		return 0
	}
	den := new(big.Int).Mul(bn, new(big.Int).SetUint64(n-1))
	v, _ := new(big.Rat).SetFrac(num, den).Float64()
	return math.Sqrt(v) / scale
}

// Quantile returns the value at quantile q (0 ≤ q ≤ 1) within the sketch's
// 1% relative accuracy, rounded to an integer as the values are (so exact
// below 50: token counts), clamped to the exact [Min, Max]; quantiles 0
// and 1 are the exact Min and Max. It is 0 when d is empty or q out of range.
//
// Quantiles are nearest-rank: the q-quantile of n values is the one of
// rank ⌈q·n⌉ (the smallest value with at least a fraction q of the values
// at or below it), as HdrHistogram and most SLA definitions take it. So p95
// of two cold starts of 1 s and 3 s is 3 s: no quantile above the median
// hides the worst half of a small sample.
func (d *Dist) Quantile(q float64) float64 {
	if d.n == 0 || d.sketch == nil || !(q >= 0 && q <= 1) {
		return 0
	}
	switch q {
	case 0:
		return float64(d.min)
	case 1:
		return float64(d.max)
	}
	r := quantile.NearestRank(q, d.n)
	if r == d.n-1 {
		return float64(d.max)
	}
	// The values are integers, so the quantile is one: below 50 the
	// sketch's 1% is under a half, and rounding makes it exact.
	v := math.Round(valueAtRank(d.sketch, float64(r)))
	return math.Min(math.Max(v, float64(d.min)), float64(d.max))
}

// valueAtRank returns the value of 0-based rank r in s (r < its count),
// within its relative accuracy. It is the sketch's GetValueAtQuantile with
// the rank given instead of derived from q·(count−1), which rounds down.
func valueAtRank(s *ddsketch.DDSketch, r float64) float64 {
	neg := s.GetNegativeValueStore()
	nNeg := neg.TotalCount()
	m := s.IndexMapping
	switch {
	case r < nNeg:
		// The negative store holds magnitudes: the r-th value from the
		// bottom is the (nNeg−1−r)-th magnitude from the smallest.
		return -m.Value(neg.KeyAtRank(nNeg - 1 - r))
	case r < nNeg+s.GetZeroCount():
		return 0
	}
	return m.Value(s.GetPositiveValueStore().KeyAtRank(r - nNeg - s.GetZeroCount()))
}

// Summary is a distribution's summary, in the metric's native unit
// (nanoseconds for durations).
type Summary struct {
	Count uint64  `json:"count"`
	Mean  float64 `json:"mean"`
	SD    float64 `json:"sd"`
	Min   float64 `json:"min"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99.9"`
	Max   float64 `json:"max"`
}

// Summary summarizes d: count, mean ± sample sd, min, p50, p90, p95, p99,
// p99.9 and max.
func (d *Dist) Summary() Summary {
	return Summary{
		Count: d.n, Mean: d.Mean(), SD: d.SD(),
		Min: float64(d.min), Max: float64(d.max),
		P50: d.Quantile(0.50), P90: d.Quantile(0.90), P95: d.Quantile(0.95),
		P99: d.Quantile(0.99), P999: d.Quantile(0.999),
	}
}

// Scaled returns s with every value divided by div (count unchanged): ns to
// ms with 1e6.
func (s Summary) Scaled(div float64) Summary {
	s.Mean /= div
	s.SD /= div
	s.Min /= div
	s.P50 /= div
	s.P90 /= div
	s.P95 /= div
	s.P99 /= div
	s.P999 /= div
	s.Max /= div
	return s
}

// distJSON is Dist's wire form. Big integers are decimal strings so that no
// JSON decoder rounds them; the sketch is DDSketch's own binary encoding
// (with its index mapping), base64. Decoding and merging the result is
// exact.
type distJSON struct {
	Count    uint64 `json:"count"`
	Sum      string `json:"sum"`
	SumSq    string `json:"sum_sq"`
	Min      int64  `json:"min"`
	Max      int64  `json:"max"`
	LogCount uint64 `json:"log_count"`
	LogSum   string `json:"log_sum"`
	LogSumSq string `json:"log_sum_sq"`
	Sketch   string `json:"sketch"`
}

// MarshalJSON implements json.Marshaler.
func (d *Dist) MarshalJSON() ([]byte, error) {
	j := distJSON{
		Count: d.n, Sum: d.sum.big().String(), SumSq: d.sumSq.big().String(),
		Min: d.min, Max: d.max, LogCount: d.logN,
		LogSum: d.logSum.big().String(), LogSumSq: d.logSumSq.big().String(),
	}
	if d.sketch != nil {
		var b []byte
		d.sketch.Encode(&b, false)
		j.Sketch = base64.StdEncoding.EncodeToString(b)
	}
	return json.Marshal(j)
}

// UnmarshalJSON implements json.Unmarshaler. It checks that the parts agree
// (sketch count = count, min ≤ max, sums in range) and rejects a sketch
// whose index mapping differs from this package's.
func (d *Dist) UnmarshalJSON(b []byte) error {
	bad := func(format string, args ...any) error {
		return errcodes.Errorf(errcodes.InvalidParam, "latency: bad distribution: "+format, args...)
	}
	var j distJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return bad("%v", err)
	}
	var out Dist
	for _, f := range []struct {
		s   string
		dst *wide
	}{{j.Sum, &out.sum}, {j.SumSq, &out.sumSq}, {j.LogSum, &out.logSum}, {j.LogSumSq, &out.logSumSq}} {
		if f.s == "" {
			continue
		}
		v, ok := new(big.Int).SetString(f.s, 10)
		if !ok {
			return bad("sum %q is not an integer", f.s)
		}
		w, ok := wideFromBig(v)
		if !ok {
			return bad("sum %q is out of range", f.s)
		}
		*f.dst = w
	}
	if out.sumSq.hi < 0 || out.logSumSq.hi < 0 {
		return bad("negative sum of squares")
	}
	out.n, out.logN, out.min, out.max = j.Count, j.LogCount, j.Min, j.Max
	if out.logN > out.n {
		return bad("log_count %d exceeds count %d", out.logN, out.n)
	}
	if out.n > 0 && out.min > out.max {
		return bad("min %d exceeds max %d", out.min, out.max)
	}
	if j.Sketch != "" {
		raw, err := base64.StdEncoding.DecodeString(j.Sketch)
		if err != nil {
			return bad("sketch: %v", err)
		}
		s, err := decodeSketch(raw)
		if err != nil {
			return bad("sketch: %v", err)
		}
		out.sketch, out.pos = s, positive(s)
	}
	var sc float64
	if out.sketch != nil {
		sc = out.sketch.GetCount()
	}
	if sc != float64(out.n) {
		return bad("sketch holds %g values, count says %d", sc, out.n)
	}
	if out.n == 0 {
		out.sketch, out.pos = nil, nil
	}
	*d = out
	return nil
}

// maxSketchIndex bounds the bin indexes a decoded sketch may hold. Every
// int64 maps to an index below 2,200 under sketchMapping; the bound keeps a
// forged encoding from making the dense store allocate gigabytes.
const maxSketchIndex = 4096

// decodeSketch decodes DDSketch's binary encoding into a sparse store
// first, checks the mapping, the bins' indexes and counts, and only then
// copies the bins into the dense stores Dist uses.
func decodeSketch(raw []byte) (*ddsketch.DDSketch, error) {
	sparse := func() store.Store { return store.NewSparseStore() }
	in, err := ddsketch.DecodeDDSketch(raw, sparse, nil)
	if err != nil {
		return nil, err
	}
	if !in.IndexMapping.Equals(sketchMapping) {
		return nil, errcodes.New(errcodes.InvalidParam, "index mapping differs from relative accuracy 0.01 logarithmic")
	}
	out := newSketch()
	var bad error
	copyBins := func(from, to store.Store) {
		from.ForEach(func(index int, count float64) bool {
			if index < -maxSketchIndex || index > maxSketchIndex || !(count >= 0) || math.IsInf(count, 0) || count != math.Trunc(count) {
				bad = errcodes.Errorf(errcodes.InvalidParam, "bin %d with count %g", index, count)
				return true
			}
			to.AddWithCount(index, count)
			return false
		})
	}
	copyBins(in.GetPositiveValueStore(), out.GetPositiveValueStore())
	copyBins(in.GetNegativeValueStore(), out.GetNegativeValueStore())
	if z := in.GetZeroCount(); bad == nil && z != 0 {
		if !(z > 0) || math.IsInf(z, 0) || z != math.Trunc(z) {
			return nil, errcodes.Errorf(errcodes.InvalidParam, "zero count %g", z)
		}
		_ = out.AddWithCount(0, z)
	}
	if bad != nil {
		return nil, bad
	}
	return out, nil
}
