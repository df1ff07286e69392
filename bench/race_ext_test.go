//go:build race

package bench_test

// raceEnabled is true under the race detector, which slows the client
// and the in-process emulator several times: rate tests then ask less.
const raceEnabled = true
