//go:build !race

package cloudreq_test

// raceEnabled is true under the race detector.
const raceEnabled = false
