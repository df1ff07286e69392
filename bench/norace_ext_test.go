//go:build !race

package bench_test

// raceEnabled is true under the race detector.
const raceEnabled = false
