//go:build race

package cloudreq_test

// raceEnabled is true under the race detector, whose instrumentation
// allocates: allocation counts are checked without it.
const raceEnabled = true
