package stats

import (
	"encoding/json"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWideMatchesBigInt(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var sum, sq wide
	bs, bq := new(big.Int), new(big.Int)
	vals := []int64{math.MinInt64, math.MaxInt64, -1, 0, 1}
	for range 2000 {
		vals = append(vals, int64(rng.Uint64()))
	}
	for _, v := range vals {
		sum.add(v)
		sq.addSquare(v)
		bv := big.NewInt(v)
		bs.Add(bs, bv)
		bq.Add(bq, new(big.Int).Mul(bv, bv))
	}
	assert.Equal(t, bs.String(), sum.big().String())
	// The squares of 2005 full-range values overflow 128 bits: compare modulo 2^128.
	mod := new(big.Int).Lsh(big.NewInt(1), 128)
	gotQ := new(big.Int).Mod(sq.big(), mod)
	assert.Equal(t, new(big.Int).Mod(bq, mod).String(), gotQ.String())

	// Merging partial sums equals summing all.
	var a, b wide
	for i, v := range vals {
		if i%2 == 0 {
			a.add(v)
		} else {
			b.add(v)
		}
	}
	a.addWide(b)
	assert.Equal(t, sum, a)

	for _, s := range []string{"0", "-1", "170141183460469231731687303715884105727", "-170141183460469231731687303715884105728", "18446744073709551616"} {
		v, _ := new(big.Int).SetString(s, 10)
		w, ok := wideFromBig(v)
		require.True(t, ok, s)
		assert.Equal(t, s, w.big().String())
	}
	_, ok := wideFromBig(new(big.Int).Lsh(big.NewInt(1), 127))
	assert.False(t, ok)
}

func TestDistExactMoments(t *testing.T) {
	var d Dist
	for _, v := range []int64{2, 4, 4, 4, 5, 5, 7, 9} {
		d.Add(v)
	}
	assert.Equal(t, uint64(8), d.Count())
	assert.Equal(t, 5.0, d.Mean())
	// Sample variance = 32 / 7.
	assert.InDelta(t, math.Sqrt(32.0/7), d.SD(), 1e-15)
	assert.Equal(t, int64(2), d.Min())
	assert.Equal(t, int64(9), d.Max())

	// A large offset does not cost precision: values 1e15 + {2,4,…}.
	var big Dist
	for _, v := range []int64{2, 4, 4, 4, 5, 5, 7, 9} {
		big.Add(1e15 + v)
	}
	assert.InDelta(t, math.Sqrt(32.0/7), big.SD(), 1e-12)

	var one Dist
	one.Add(42)
	assert.Equal(t, 0.0, one.SD())
	assert.Equal(t, 42.0, one.Quantile(0.99))
	var none Dist
	assert.Equal(t, Summary{}, none.Summary())
}

// TestDistQuantilesOfSmallCounts: values are integers, so a quantile is
// one too; below 50 the sketch's 1% is under a half and the quantile is
// exact (token counts: a p50 of 52 tokens, not 51.9).
func TestDistQuantilesOfSmallCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var d Dist
	vals := make([]float64, 0, 500)
	for range 500 {
		v := 1 + rng.Int64N(49)
		d.Add(v)
		vals = append(vals, float64(v))
	}
	slices.Sort(vals)
	for _, q := range []float64{0.1, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999} {
		exact := vals[int(math.Ceil(q*float64(len(vals))))-1]
		assert.Equal(t, exact, d.Quantile(q), "q=%g", q)
	}
	var tokens Dist
	for _, v := range []int64{51, 52, 52, 52, 53} {
		tokens.Add(v)
	}
	q := tokens.Quantile(0.5)
	assert.Equal(t, math.Round(q), q, "p50 of token counts")
	assert.InDelta(t, 52, q, 1)
}

func TestDistQuantilesWithinOnePercent(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var d Dist
	vals := make([]float64, 0, 20000)
	for range 20000 {
		v := int64(math.Exp(rng.NormFloat64()*0.8 + math.Log(50e6))) // ~50 ms lognormal
		d.Add(v)
		vals = append(vals, float64(v))
	}
	slices.Sort(vals)
	for _, q := range []float64{0.5, 0.9, 0.95, 0.99, 0.999} {
		// Nearest rank: the value of 1-based rank ⌈q·n⌉.
		exact := vals[int(math.Ceil(q*float64(len(vals))))-1]
		assert.InEpsilon(t, exact, d.Quantile(q), RelativeAccuracy, "q=%g", q)
	}
	assert.Equal(t, vals[0], d.Quantile(0))
	assert.Equal(t, vals[len(vals)-1], d.Quantile(1))
	assert.Equal(t, 0.0, d.Quantile(1.5))
}

// TestDistQuantileNearestRank: small samples, where rank conventions
// differ most. A quantile is the value of rank ⌈q·n⌉, on either side of
// zero.
func TestDistQuantileNearestRank(t *testing.T) {
	dist := func(vals ...int64) *Dist {
		var d Dist
		for _, v := range vals {
			d.Add(v)
		}
		return &d
	}
	ms := func(v int64) int64 { return v * 1e6 }
	two := dist(ms(1000), ms(3000))
	assert.InEpsilon(t, 1e9, two.Quantile(0.5), RelativeAccuracy)
	assert.Equal(t, 3e9, two.Quantile(0.95), "p95 of two values is the larger")
	assert.Equal(t, 3e9, two.Quantile(0.99))

	var hundred []int64
	for i := int64(1); i <= 100; i++ {
		hundred = append(hundred, ms(i))
	}
	h := dist(hundred...)
	for q, want := range map[float64]float64{0.01: 1e6, 0.5: 50e6, 0.9: 90e6, 0.95: 95e6, 0.99: 99e6, 0.999: 100e6} {
		assert.InEpsilon(t, want, h.Quantile(q), RelativeAccuracy, "q=%g", q)
	}

	neg := dist(ms(-30), ms(-20), ms(-10), 0, ms(10))
	for q, want := range map[float64]float64{0.2: -30e6, 0.4: -20e6, 0.5: -10e6, 0.6: -10e6, 0.8: 0, 0.9: 10e6} {
		if want == 0 {
			assert.Equal(t, 0.0, neg.Quantile(q), "q=%g", q)
			continue
		}
		assert.InEpsilon(t, want, neg.Quantile(q), RelativeAccuracy, "q=%g", q)
	}
}

func TestDistNegativeAndZero(t *testing.T) {
	var d Dist
	for _, v := range []int64{-5e6, 0, 0, 3e6} {
		d.Add(v)
	}
	assert.Equal(t, int64(-5e6), d.Min())
	assert.InEpsilon(t, -5e6, d.Quantile(0), 0.01)
	assert.Equal(t, 0.0, d.Quantile(0.5))
	assert.Equal(t, uint64(1), d.logN, "only positive values enter the log moments")
}

func TestDistMergeAndJSONAreExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var all, a, b Dist
	for i := range 5000 {
		v := int64(rng.ExpFloat64()*30e6) - 1e6 // some negatives and zeros too
		all.Add(v)
		if i%3 == 0 {
			a.Add(v)
		} else {
			b.Add(v)
		}
	}
	ja, err := json.Marshal(&a)
	require.NoError(t, err)
	jb, err := json.Marshal(&b)
	require.NoError(t, err)
	var da, db Dist
	require.NoError(t, json.Unmarshal(ja, &da))
	require.NoError(t, json.Unmarshal(jb, &db))
	da.Merge(&db)
	assert.Equal(t, all.Summary(), da.Summary())
	assert.Equal(t, all.sum, da.sum)
	assert.Equal(t, all.sumSq, da.sumSq)
	assert.Equal(t, all.logSum, da.logSum)
	jall, _ := json.Marshal(&all)
	jm, _ := json.Marshal(&da)
	assert.JSONEq(t, string(jall), string(jm))

	c := all.Copy()
	c.Add(1)
	assert.Equal(t, all.Count()+1, c.Count(), "Copy is deep")
	assert.Equal(t, uint64(5000), all.Count())
}

func TestDistUnmarshalRejects(t *testing.T) {
	var good Dist
	good.Add(5)
	j, _ := json.Marshal(&good)
	var m map[string]any
	require.NoError(t, json.Unmarshal(j, &m))
	for name, mut := range map[string]func(map[string]any){
		"count disagrees with sketch": func(m map[string]any) { m["count"] = 2 },
		"sum not an integer":          func(m map[string]any) { m["sum"] = "1.5" },
		"sum out of range": func(m map[string]any) {
			m["sum"] = "1" + string(make([]byte, 0)) + "0000000000000000000000000000000000000000"
		},
		"negative sum of squares": func(m map[string]any) { m["sum_sq"] = "-4" },
		"sketch not base64":       func(m map[string]any) { m["sketch"] = "!!" },
		"log count above count":   func(m map[string]any) { m["log_count"] = 9 },
		"min above max":           func(m map[string]any) { m["min"] = 10 },
	} {
		t.Run(name, func(t *testing.T) {
			c := map[string]any{}
			for k, v := range m {
				c[k] = v
			}
			mut(c)
			b, _ := json.Marshal(c)
			var d Dist
			assert.Error(t, json.Unmarshal(b, &d))
		})
	}
}

func TestSketchIndexMatchesMapping(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	vals := []int64{1, 2, 3, 999, 1000, 1001, math.MaxInt64}
	for range 100000 {
		vals = append(vals, 1+rng.Int64N(1<<uint(1+rng.IntN(62))))
	}
	for _, v := range vals {
		want := sketchMapping.Index(float64(v))
		got := int(math.Log(float64(v)) * logMultiplier)
		if got != want {
			t.Fatalf("value %d: index %d, mapping says %d", v, got, want)
		}
	}
	// And a Dist built through the fast path equals one built by the sketch's Add.
	var d Dist
	ref := newSketch()
	for _, v := range vals[:5000] {
		d.Add(v)
		_ = ref.Add(float64(v))
	}
	for _, q := range []float64{0.01, 0.5, 0.99} {
		want, _ := ref.GetValueAtQuantile(q)
		got, _ := d.sketch.GetValueAtQuantile(q)
		assert.Equal(t, want, got)
	}
}
