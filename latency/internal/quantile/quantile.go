// Package quantile holds the quantile definition that package latency's
// start classifier and package latency/stats's distributions share: the
// nearest-rank rank of a quantile.
package quantile

import "math"

// NearestRank returns the 0-based rank of the q-quantile of n > 0 values
// by the nearest-rank definition: ⌈q·n⌉ − 1, within [0, n−1]. The product
// is shrunk by one part in 10¹² first, so that q·n's rounding error (q =
// 0.95 is not exact in binary) cannot push a whole rank up by one.
func NearestRank(q float64, n uint64) uint64 {
	r := math.Ceil(q * float64(n) * (1 - 1e-12))
	if r < 1 {
		return 0
	}
	return min(uint64(r)-1, n-1)
}
