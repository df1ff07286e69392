package stats

import (
	"math"
	"math/big"
)

// LogNormal is a LogNormal(μ, σ) distribution fitted to a Dist's positive
// values by maximum likelihood: μ is the mean of ln(value) and σ² the mean
// squared deviation of ln(value) (divisor n). Values are in the Dist's
// unit, so for durations μ is a mean of ln(nanoseconds).
type LogNormal struct {
	// N is how many (positive) values the fit rests on.
	N     uint64
	Mu    float64
	Sigma float64
}

// FitLogNormal fits a LogNormal to d's positive values; false with fewer
// than two of them.
func (d *Dist) FitLogNormal() (LogNormal, bool) {
	if d.logN < 2 {
		return LogNormal{}, false
	}
	n := new(big.Int).SetUint64(d.logN)
	mu, _ := new(big.Rat).SetFrac(d.logSum.big(), n).Float64()
	// σ² = (n·Σl² − (Σl)²) / n², exactly, then scaled back from fixed point.
	num := new(big.Int).Mul(n, d.logSumSq.big())
	num.Sub(num, new(big.Int).Mul(d.logSum.big(), d.logSum.big()))
	var v float64
	if num.Sign() > 0 {
		v, _ = new(big.Rat).SetFrac(num, new(big.Int).Mul(n, n)).Float64()
	}
	return LogNormal{N: d.logN, Mu: mu / logScale, Sigma: math.Sqrt(v) / logScale}, true
}

// Quantile returns the fitted distribution's value at quantile q (0 < q < 1).
func (l LogNormal) Quantile(q float64) float64 {
	if !(q > 0 && q < 1) {
		return math.NaN()
	}
	z := math.Sqrt2 * math.Erfinv(2*q-1)
	return math.Exp(l.Mu + l.Sigma*z)
}

// Mean returns the fitted distribution's mean, exp(μ + σ²/2).
func (l LogNormal) Mean() float64 { return math.Exp(l.Mu + l.Sigma*l.Sigma/2) }

// InUnit returns the fit for values divided by div (ns to ms: 1e6): μ
// shifts by −ln(div), σ is unchanged.
func (l LogNormal) InUnit(div float64) LogNormal {
	l.Mu -= math.Log(div)
	return l
}
