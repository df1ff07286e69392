//go:build !race

package bench

// raceEnabled is true under the race detector.
const raceEnabled = false
