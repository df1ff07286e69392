package latency

import "math"

// warmAccuracy is the relative accuracy of the classifier's sketch of warm
// times to first byte: its median is within 1% of a value of the right
// rank.
const warmAccuracy = 0.01

// The classifier's sketch is a DDSketch (Masson, Rim and Lee, VLDB 2019)
// with DataDog's cubically interpolated index mapping and a dense store,
// kept here rather than taken from github.com/DataDog/sketches-go so that
// the client, which classifies every call, does not link the sketch
// library and its protobuf encoding. Its bins and values are those the
// library computes (TestWarmSketchMatchesLibrary checks them): the mapping
// approximates log₂ by the exponent of a float64 plus a cubic of its
// significand, so indexing takes no logarithm.
//
// The cubic's coefficients, from the mapping's definition.
const (
	cubicA = 6.0 / 35.0
	cubicB = -3.0 / 5.0
	cubicC = 10.0 / 7.0
)

var (
	// warmGamma is the mapping's base; warmMultiplier is 1/log₂(γ).
	warmGamma      = math.Pow((1+warmAccuracy)/(1-warmAccuracy), 10*math.Ln2/7)
	warmMultiplier = 1 / math.Log2(warmGamma)
	// warmValueScale turns a bin's lower bound into its representative
	// value: 1 + the mapping's relative accuracy.
	warmValueScale = 1 + (1 - 2/(1+math.Exp(7.0/10*math.Log2(warmGamma))))
)

const (
	f64ExponentMask    = 0x7ff0000000000000
	f64SignificandMask = 0x000fffffffffffff
	f64ExponentBias    = 1023
	f64One             = 0x3ff0000000000000 // the bits of 1.0
)

// cubicLog2 approximates log₂(x), x a positive normal float64: its binary
// exponent plus a cubic of its significand s − 1 ∈ [0, 1).
func cubicLog2(x float64) float64 {
	b := math.Float64bits(x)
	e := float64(int((b&f64ExponentMask)>>52) - f64ExponentBias)
	s := math.Float64frombits(b&f64SignificandMask|f64One) - 1
	return ((cubicA*s+cubicB)*s+cubicC)*s + e
}

// cubicExp2 is cubicLog2's exact inverse: the cube is solved by Cardano's
// formula for the significand, and the exponent put back.
func cubicExp2(y float64) float64 {
	e := math.Floor(y)
	d0 := cubicB*cubicB - 3*cubicA*cubicC
	d1 := 2*cubicB*cubicB*cubicB - 9*cubicA*cubicB*cubicC - 27*cubicA*cubicA*(y-e)
	p := math.Cbrt((d1 - math.Sqrt(d1*d1-4*d0*d0*d0)) / 2)
	sig := -(cubicB+p+d0/p)/(3*cubicA) + 1
	return math.Float64frombits(uint64((int(e)+f64ExponentBias)<<52)&f64ExponentMask | math.Float64bits(sig)&f64SignificandMask)
}

// warmIndex is the bin of a positive value.
func warmIndex(v float64) int {
	i := cubicLog2(v) * warmMultiplier
	if i >= 0 {
		return int(i)
	}
	return int(i) - 1
}

// warmValue is the value a bin stands for.
func warmValue(i int) float64 {
	return cubicExp2(float64(i)/warmMultiplier) * warmValueScale
}

// warmSketch counts durations (≥ 0) in the bins of the cubically
// interpolated mapping: zeros apart, positive values in a dense run of
// bins. The zero value is empty.
type warmSketch struct {
	zeros  uint64
	bins   []uint64 // bins[i] counts index offset+i
	offset int
}

// add records a duration ≥ 0 (in nanoseconds).
func (s *warmSketch) add(v float64) {
	if v <= 0 {
		s.zeros++
		return
	}
	i := warmIndex(v)
	switch {
	case len(s.bins) == 0:
		s.bins, s.offset = make([]uint64, 1, 64), i
	case i < s.offset:
		grown := make([]uint64, len(s.bins)+s.offset-i, cap(s.bins)+s.offset-i)
		copy(grown[s.offset-i:], s.bins)
		s.bins, s.offset = grown, i
	case i >= s.offset+len(s.bins):
		s.bins = append(s.bins, make([]uint64, i-s.offset-len(s.bins)+1)...)
	}
	s.bins[i-s.offset]++
}

// valueAtRank returns the value of 0-based rank r (r < the count), within
// the mapping's relative accuracy.
func (s *warmSketch) valueAtRank(r uint64) float64 {
	if r < s.zeros {
		return 0
	}
	r -= s.zeros
	var n uint64
	for i, c := range s.bins {
		n += c
		if n > r {
			return warmValue(s.offset + i)
		}
	}
	return warmValue(s.offset + len(s.bins) - 1)
}
