package latency

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/DataDog/sketches-go/ddsketch"
	"github.com/DataDog/sketches-go/ddsketch/mapping"
	"github.com/DataDog/sketches-go/ddsketch/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWarmSketchMatchesLibrary: the classifier's own sketch gives the very
// bins, values and ranked values of the library's DDSketch with the
// cubically interpolated mapping and dense stores it replaces.
func TestWarmSketchMatchesLibrary(t *testing.T) {
	m, err := mapping.NewCubicallyInterpolatedMapping(warmAccuracy)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(7, 8))
	vals := []float64{1, 2, 3, 999, 1000, 1001, 1 << 20, float64(time.Hour), float64(math.MaxInt64)}
	for range 20000 {
		vals = append(vals, math.Floor(math.Exp(rng.Float64()*43))) // 1 ns to ~150 days
	}
	for _, v := range vals {
		if v < 1 {
			continue
		}
		i := warmIndex(v)
		require.Equal(t, m.Index(v), i, "index of %g", v)
		require.Equal(t, m.Value(i), warmValue(i), "value of bin %d", i)
	}

	// Ranked values over sets that grow the bins both ways, zeros
	// included.
	for trial := range 20 {
		lib := ddsketch.NewDDSketch(m, store.NewDenseStore(), store.NewDenseStore())
		var own warmSketch
		n := 1 + rng.IntN(500)
		for range n {
			v := 0.0
			if rng.IntN(20) > 0 {
				v = math.Floor(math.Exp(math.Log(35e6) + (1+float64(trial))*0.3*rng.NormFloat64()))
			}
			require.NoError(t, lib.Add(v))
			own.add(v)
		}
		for r := range uint64(n) {
			assert.Equal(t, libValueAtRank(lib, float64(r)), own.valueAtRank(r), "trial %d rank %d of %d", trial, r, n)
		}
	}
}

// libValueAtRank is the library's value of 0-based rank r of a sketch of
// values ≥ 0.
func libValueAtRank(s *ddsketch.DDSketch, r float64) float64 {
	if r < s.GetZeroCount() {
		return 0
	}
	return s.IndexMapping.Value(s.GetPositiveValueStore().KeyAtRank(r - s.GetZeroCount()))
}
