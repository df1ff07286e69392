//go:build race

package bench

// raceEnabled is true under the race detector, which slows the client
// several times: rate tests then check honesty, not the rate.
const raceEnabled = true
